// The shipped data files load, and malformed ones are refused naming the entry.
#include <cstdio>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "json_data_file.hpp"
#include "polychip/error.hpp"
#include "tolerance.hpp"
#include "verdict.hpp"
#include "waivers.hpp"

namespace polychip::precision {

// The shipped conformance/data/tolerances.json, compiled in.
extern const char* const kBuiltinTolerancesJson;

namespace {

using nlohmann::json;

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

TEST(DataFiles, HasSchemaOnlyForAnObjectWhoseSchemaIsThatString) {
  EXPECT_TRUE(has_schema(json{{"schema", "polychip.x/1"}, {"other", 1}}, "polychip.x/1"));
  for (const json& doc :
       {json{{"schema", "polychip.x/2"}}, json{{"schema", "polychip.x/1 "}}, json{{"schema", 1}},
        json{{"schema", json::array({"polychip.x/1"})}}, json{{"Schema", "polychip.x/1"}},
        json::object(), json::array({"schema", "polychip.x/1"}), json("polychip.x/1")})
    EXPECT_FALSE(has_schema(doc, "polychip.x/1")) << doc.dump();
}

TEST(Tolerances, BuiltinTableFollowsTheAnchors) {
  const auto& t = ToleranceTable::builtin();
  auto exp32 = t.lookup("exp", DType::kF32);
  EXPECT_EQ(exp32.mode, ToleranceMode::kUlp);
  EXPECT_EQ(exp32.ulp, 3);  // OpenCL CTS float column
  EXPECT_EQ(t.lookup("exp", DType::kF16).ulp, 2);
  EXPECT_EQ(t.lookup("add", DType::kBF16).ulp, 0);
  auto g = t.lookup("gemm", DType::kF32);
  EXPECT_EQ(g.mode, ToleranceMode::kClose);
  EXPECT_DOUBLE_EQ(g.rtol, 1.3e-6);  // torch / FlagGems
  EXPECT_DOUBLE_EQ(t.lookup("gemm", DType::kF16).rtol, 1e-3);
  EXPECT_DOUBLE_EQ(t.lookup("gemm", DType::kBF16).rtol, 1.6e-2);
  // Below f32's half ulp (6e-8): an f64 op computed in f32 fails.
  EXPECT_DOUBLE_EQ(t.lookup("gemm", DType::kF64).rtol, 1e-12);
  EXPECT_GT(t.lookup("gemm:tf32", DType::kF32).rtol, 1e-4);
  EXPECT_EQ(t.lookup("argmax", DType::kI64).mode, ToleranceMode::kExact);
}

TEST(Tolerances, MalformedTablesAreRefused) {
  json good = {{"schema", "polychip.tolerances/1"},
               {"defaults", {{"rtol", {{"f32", 1e-6}}}, {"atol_factor", {{"f32", 1e-7}}}}}};
  EXPECT_NO_THROW(ToleranceTable::from_json(good, "t"));
  for (const json& schema : {json("x"), json(1)}) {
    json bad_schema = good;
    bad_schema["schema"] = schema;
    EXPECT_NE(error_of([&] { ToleranceTable::from_json(bad_schema, "t"); }).find("schema"),
              std::string::npos)
        << schema;
  }
  json bad_dtype = good;
  bad_dtype["defaults"]["rtol"]["f33"] = 1;
  EXPECT_NE(error_of([&] { ToleranceTable::from_json(bad_dtype, "t"); }).find("defaults.rtol"),
            std::string::npos);
  // A defaults section that is missing or holds a number instead of a table.
  for (const char* section : {"rtol", "atol_factor"}) {
    json missing = good;
    missing["defaults"].erase(section);
    json not_object = good;
    not_object["defaults"][section] = 1e-6;
    for (const json* malformed : {&missing, &not_object}) {
      EXPECT_NE(error_of([&] {
                  ToleranceTable::from_json(*malformed, "t");
                }).find(std::string("'defaults.") + section + "' must be an object"),
                std::string::npos)
          << section << ": " << malformed->dump();
    }
  }
  json negative = good;
  negative["ulp_bounds"] = {{"exp", {{"f32", -1}}}};
  EXPECT_NE(error_of([&] { ToleranceTable::from_json(negative, "t"); }).find("ulp_bounds.exp.f32"),
            std::string::npos);
  // A dtype the table does not cover is an error at lookup, naming it.
  auto t = ToleranceTable::from_json(good, "t");
  EXPECT_NE(error_of([&] { t.lookup("gemm", DType::kF16); }).find("f16"), std::string::npos);
  EXPECT_NE(error_of([] { ToleranceTable::from_file("/nonexistent/t.json"); }).find("/nonexistent"),
            std::string::npos);
}

// Misspelt keys, ops the contract lacks and fields of the wrong type are
// refused naming the entry: each would otherwise leave a tolerance at its
// default unseen, or fail every case of the run at lookup.
TEST(Tolerances, UnknownKeysOpsAndMistypedFieldsAreRefusedNamingTheEntry) {
  const json good = {{"schema", "polychip.tolerances/1"},
                     {"defaults",
                      {{"rtol", {{"f32", 1e-6}}},
                       {"atol_factor", {{"f32", 1e-7}}},
                       {"quality", {{"ratio", 4}, {"floor", 0}}}}},
                     {"ulp_bounds", {{"exp", {{"f32", 3}}}}},
                     {"ops",
                      {{"adamw", {{"rtol", {{"f32", 1e-4}}}, {"about", "why"}}},
                       {"gemm:tf32", {{"atol_factor", {{"*", 1e-3}}}}},
                       {"gemm:rpr", {{"rtol", {{"bf16", 1e-2}}}}}}}};
  EXPECT_NO_THROW(ToleranceTable::from_json(good, "t"));
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& d) { d["extra"] = 1; }, "'the document': unknown key 'extra'"},
      {[](json& d) { d["defaults"] = 1; }, "'defaults' must be an object"},
      {[](json& d) { d["defaults"]["rtoll"] = json::object(); }, "'defaults': unknown key 'rtoll'"},
      {[](json& d) { d["defaults"]["quality"] = "x"; }, "'defaults.quality' must be an object"},
      {[](json& d) { d["defaults"]["quality"]["ratoi"] = 4; },
       "'defaults.quality': unknown key 'ratoi'"},
      {[](json& d) { d["defaults"]["quality"]["ratio"] = 0; },
       "'defaults.quality.ratio' must be a positive number"},
      {[](json& d) { d["defaults"]["quality"]["ratio"] = "4"; },
       "'defaults.quality.ratio' must be a positive number"},
      {[](json& d) { d["defaults"]["quality"]["floor"] = -0.5; },
       "'defaults.quality.floor' must be a non-negative number"},
      {[](json& d) {
         d["ulp_bounds"]["expp"] = {{"f32", 3}};
       },
       "'ulp_bounds.expp': no op 'expp' in the contract"},
      {[](json& d) {
         d["ulp_bounds"]["gemm:tf32"] = {{"f32", 3}};
       },
       "'ulp_bounds.gemm:tf32': no op"},
      {[](json& d) {
         d["ops"]["adam"] = {{"rtol", {{"f32", 1}}}};
       },
       "'ops.adam': no op 'adam' in the contract (variants: gemm:tf32, gemm:rpr)"},
      {[](json& d) {
         d["ops"]["gemm:fp8"] = {{"rtol", {{"f32", 1}}}};
       },
       "'ops.gemm:fp8': no op"},
      {[](json& d) {
         d["ops"]["exp:tf32"] = {{"rtol", {{"f32", 1}}}};
       },
       "'ops.exp:tf32': no op"},
      {[](json& d) { d["ops"]["adamw"] = 1e-4; }, "'ops.adamw' must be an object"},
      {[](json& d) {
         d["ops"]["adamw"]["rtool"] = {{"f32", 1}};
       },
       "'ops.adamw': unknown key 'rtool' (known: rtol, atol_factor, row_atol_factor, about)"},
      {[](json& d) {
         d["ops"]["adamw"]["row_atol_factor"] = {{"f32", 1e-6}};
       },
       "'ops.adamw.row_atol_factor': adamw is not a row op"},
      {[](json& d) { d["defaults"]["row_atol_factor"] = 1e-6; },
       "'defaults.row_atol_factor' must be an object of dtype -> number"},
      {[](json& d) {
         d["defaults"]["row_atol_factor"] = {{"f32", -1}};
       },
       "'defaults.row_atol_factor.f32' must be a non-negative number"},
      {[](json& d) { d["ops"]["adamw"]["rtol"] = 1e-4; },
       "'ops.adamw.rtol' must be an object of dtype -> number"},
  };
  for (const auto& [spoil, expected] : cases) {
    json doc = good;
    spoil(doc);
    EXPECT_NE(error_of([&] { ToleranceTable::from_json(doc, "t"); }).find(expected),
              std::string::npos)
        << expected << "\n"
        << error_of([&] { ToleranceTable::from_json(doc, "t"); });
  }
}

// What results.json records of a tolerance: the bound of its mode and
// nothing of the others.
TEST(Tolerances, RecordedWithTheFieldsOfTheirMode) {
  Tolerance ulp;
  ulp.mode = ToleranceMode::kUlp;
  ulp.ulp = 3;
  const json u = to_json(ulp);
  EXPECT_EQ(u.at("mode"), "ulp");
  EXPECT_EQ(u.at("ulp"), 3);
  EXPECT_FALSE(u.contains("rtol"));
  EXPECT_TRUE(u.contains("quality_ratio"));
  Tolerance close;
  close.mode = ToleranceMode::kClose;
  close.rtol = 1e-3;
  close.atol_factor = 1e-5;
  const json c = to_json(close);
  EXPECT_EQ(c.at("rtol"), 1e-3);
  EXPECT_EQ(c.at("atol_factor"), 1e-5);
  EXPECT_FALSE(c.contains("ulp"));
  EXPECT_TRUE(c.contains("quality_floor"));
  Tolerance exact;
  exact.mode = ToleranceMode::kExact;
  const json e = to_json(exact);
  EXPECT_EQ(e.at("mode"), "exact");
  for (const char* field : {"ulp", "rtol", "atol_factor", "quality_ratio", "quality_floor"})
    EXPECT_FALSE(e.contains(field)) << field;
}

// A bound that lets more through than the built-in one is named; one as
// strict or stricter is not; a change of mode is always named.
TEST(Tolerances, LooseningNamesEveryLooserBoundAndAnyChangeOfMode) {
  Tolerance ulp3;
  ulp3.mode = ToleranceMode::kUlp;
  ulp3.ulp = 3;
  Tolerance ulp4 = ulp3, ulp2 = ulp3;
  ulp4.ulp = 4;
  ulp2.ulp = 2;
  EXPECT_EQ(loosening(ulp4, ulp3), "ulp 4 > 3");
  EXPECT_EQ(loosening(ulp3, ulp3), "");
  EXPECT_EQ(loosening(ulp2, ulp3), "");
  Tolerance close;
  close.mode = ToleranceMode::kClose;
  close.rtol = 1e-3;
  close.atol_factor = 1e-6;
  Tolerance wider_rtol = close, wider_atol = close, both = close, tighter = close;
  wider_rtol.rtol = 2e-3;
  wider_atol.atol_factor = 2e-6;
  both.rtol = 2e-3;
  both.atol_factor = 2e-6;
  tighter.rtol = 5e-4;
  tighter.atol_factor = 5e-7;
  EXPECT_EQ(loosening(wider_rtol, close), "rtol 0.002 > 0.001");
  EXPECT_EQ(loosening(wider_atol, close), "atol_factor 2e-06 > 1e-06");
  EXPECT_EQ(loosening(both, close), "rtol 0.002 > 0.001, atol_factor 2e-06 > 1e-06");
  EXPECT_EQ(loosening(tighter, close), "");
  // Quality thresholds move warnings, not verdicts.
  Tolerance quieter = close;
  quieter.quality_ratio = 100;
  EXPECT_EQ(loosening(quieter, close), "");
  EXPECT_EQ(loosening(close, ulp3),
            "close (rtol 0.001, atol_factor 1e-06) where the built-in has ulp 3");
  EXPECT_EQ(loosening(ulp3, close),
            "ulp 3 where the built-in has close (rtol 0.001, atol_factor 1e-06)");
  // A row op's bound growing linearly where the built-in grows as the square
  // root is looser at every row longer than 1, whatever the factors.
  Tolerance rows = close;
  rows.atol_grows_as_sqrt = true;
  EXPECT_EQ(loosening(tighter, rows), "atol grows as reduce_len, not sqrt(reduce_len)");
  EXPECT_EQ(loosening(rows, close), "");
}

// Row ops take the row_atol_factor of their dtype, growing as the square
// root of the row; other ops, and dtypes without one, keep atol_factor.
TEST(Tolerances, RowOpsTakeTheRowFactorWhereTheirDtypeHasOne) {
  const json doc = {{"schema", "polychip.tolerances/1"},
                    {"defaults",
                     {{"rtol", {{"*", 1e-6}}},
                      {"atol_factor", {{"*", 1e-7}}},
                      {"row_atol_factor", {{"f32", 3e-7}}}}},
                    {"ops", {{"softmax", {{"row_atol_factor", {{"f32", 5e-7}}}}}}}};
  const ToleranceTable t = ToleranceTable::from_json(doc, "t");
  const Tolerance sum = t.lookup("reduce_sum", DType::kF32);
  EXPECT_TRUE(sum.atol_grows_as_sqrt);
  EXPECT_EQ(sum.atol_factor, 3e-7);
  EXPECT_EQ(sum.source, "defaults.rtol, defaults.row_atol_factor");
  const Tolerance softmax = t.lookup("softmax", DType::kF32);
  EXPECT_EQ(softmax.atol_factor, 5e-7);
  EXPECT_EQ(softmax.source, "defaults.rtol, ops.softmax.row_atol_factor");
  EXPECT_EQ(to_json(softmax).at("atol_growth"), "sqrt(reduce_len)");
  for (const auto& [op, dtype] :
       {std::pair{"reduce_sum", DType::kF16}, {"gemm", DType::kF32}, {"sigmoid", DType::kF32}}) {
    const Tolerance other = t.lookup(op, dtype);
    EXPECT_FALSE(other.atol_grows_as_sqrt) << op;
    EXPECT_EQ(other.atol_factor, 1e-7) << op;
  }
  EXPECT_EQ(close_atol(sum, 4096, 2.0), 3e-7 * 64 * 2.0);
  EXPECT_EQ(close_atol(t.lookup("gemm", DType::kF32), 4096, 2.0), 1e-7 * 4096 * 2.0);
}

TEST(Tolerances, LoosenedPastBuiltinListsTheOpsAndDtypesAFileLoosens) {
  const json builtin = json::parse(kBuiltinTolerancesJson);
  EXPECT_TRUE(loosened_past_builtin(ToleranceTable::from_json(builtin, "copy")).empty());

  json wider_f32 = builtin;
  wider_f32["defaults"]["rtol"]["f32"] = 0.01;
  const auto loosened = loosened_past_builtin(ToleranceTable::from_json(wider_f32, "wider"));
  auto listed = [&](const std::string& op, DType dtype) -> std::string {
    for (const auto& l : loosened)
      if (l.op == op && l.dtype == dtype) return l.change;
    return "";
  };
  EXPECT_EQ(listed("gemm", DType::kF32), "rtol 0.01 > 1.3e-06");
  EXPECT_EQ(listed("layernorm_backward", DType::kF32), "rtol 0.01 > 1.3e-06");
  EXPECT_EQ(listed("gemm", DType::kF16), "");   // another dtype
  EXPECT_EQ(listed("exp", DType::kF32), "");    // ulp mode: rtol does not apply
  EXPECT_EQ(listed("adamw", DType::kF32), "");  // its own rtol, 1e-4, wins
  EXPECT_EQ(listed("gemm:tf32", DType::kF32), "");
  for (const auto& l : loosened) EXPECT_EQ(l.dtype, DType::kF32) << l.op;

  json wider_tf32 = builtin;
  wider_tf32["ops"]["gemm:tf32"]["rtol"]["f32"] = 0.01;
  const auto tf32 = loosened_past_builtin(ToleranceTable::from_json(wider_tf32, "tf32"));
  ASSERT_EQ(tf32.size(), 1u);
  EXPECT_EQ(tf32[0].op, "gemm:tf32");
  EXPECT_EQ(tf32[0].change, "rtol 0.01 > 0.002");

  json no_exp_bounds = builtin;
  no_exp_bounds["ulp_bounds"].erase("exp");
  const auto changed = loosened_past_builtin(ToleranceTable::from_json(no_exp_bounds, "no exp"));
  ASSERT_EQ(changed.size(), 4u);  // f64, f32, f16, bf16; f8 outputs were never ulp-bounded
  EXPECT_EQ(changed[1].op, "exp");
  EXPECT_EQ(changed[1].change,
            "close (rtol 1.3e-06, atol_factor 2.4e-07) where the built-in has ulp 3");
  EXPECT_EQ(
      to_json(changed)[1],
      json({{"op", "exp"},
            {"dtype", "f32"},
            {"change", "close (rtol 1.3e-06, atol_factor 2.4e-07) where the built-in has ulp 3"}}));

  // Every pair is looked up, so a dtype without a bound is refused before
  // any case would need it.
  json no_f16 = builtin;
  no_f16["defaults"]["rtol"].erase("f16");
  EXPECT_EQ(error_of([&] { loosened_past_builtin(ToleranceTable::from_json(no_f16, "t.json")); }),
            "tolerances 't.json': no 'rtol' for dtype f16 (op gemm)");
}

TEST(Waivers, ParseMatchAndRefuse) {
  json doc = {{"schema", "polychip.waivers/1"},
              {"waivers",
               {{{"adapter", "sim.bf16acc"},
                 {"op", "gemm"},
                 {"dtype", "*"},
                 {"kind", "waiver"},
                 {"reason", "bf16 accumulators"}},
                {{"adapter", "*"},
                 {"op", "exp"},
                 {"dtype", "f32"},
                 {"kind", "expected_failure"},
                 {"reason", "r"},
                 {"case", "exp/f32/999/*"}}}}};
  auto list = WaiverList::from_json(doc, "w");
  EXPECT_TRUE(list.match("sim.bf16acc", "sim.bf16acc", "gemm", DType::kF16));
  EXPECT_TRUE(list.match("sim", "sim.bf16acc", "gemm", DType::kF16));  // by device type
  EXPECT_FALSE(list.match("cpu", "cpu.host", "gemm", DType::kF16));
  EXPECT_TRUE(list.match("cpu", "cpu.host", "exp", DType::kF32, "exp/f32/999/special/seed=1"));
  EXPECT_FALSE(list.match("cpu", "cpu.host", "exp", DType::kF32, "exp/f32/1000/seed=1"));
  EXPECT_EQ(list.for_adapter("sim.bf16acc", "sim.bf16acc").size(), 2u);
  EXPECT_EQ(list.for_adapter("cpu", "cpu.host").size(), 1u);

  json bad_kind = doc;
  bad_kind["waivers"][0]["kind"] = "skip";
  EXPECT_NE(error_of([&] { WaiverList::from_json(bad_kind, "w"); }).find("waivers[0].kind"),
            std::string::npos);
  json bad_op = doc;
  bad_op["waivers"][1]["op"] = "expp";
  EXPECT_NE(error_of([&] { WaiverList::from_json(bad_op, "w"); }).find("waivers[1].op"),
            std::string::npos);
  json no_reason = doc;
  no_reason["waivers"][0].erase("reason");
  EXPECT_NE(error_of([&] { WaiverList::from_json(no_reason, "w"); }).find("reason"),
            std::string::npos);
  EXPECT_NO_THROW(WaiverList::builtin());
}

// One waiver narrowed on every field: the field-by-field and leak tests.
json narrow_waiver() {
  return {{"adapter", "sim.bf16acc"}, {"op", "gemm"},  {"dtype", "f16"},
          {"kind", "waiver"},         {"reason", "r"}, {"case", "gemm/f16/8x8x8/seed=1"}};
}

WaiverList one_waiver(const json& entry) {
  return WaiverList::from_json({{"schema", "polychip.waivers/1"}, {"waivers", {entry}}}, "w");
}

TEST(Waivers, EveryFieldMustMatchAndAWaiverDoesNotLeakToAnother) {
  const auto list = one_waiver(narrow_waiver());
  const std::string id = "gemm/f16/8x8x8/seed=1";
  EXPECT_TRUE(list.match("sim.bf16acc", "sim", "gemm", DType::kF16, id));
  EXPECT_TRUE(list.match("sim", "sim.bf16acc", "gemm", DType::kF16, id));    // by device type
  EXPECT_FALSE(list.match("sim", "sim", "gemm", DType::kF16, id));           // neither adapter
  EXPECT_FALSE(list.match("sim.bf16acc", "sim", "add", DType::kF16, id));    // another op
  EXPECT_FALSE(list.match("sim.bf16acc", "sim", "gemm", DType::kBF16, id));  // another dtype
  EXPECT_FALSE(list.match("sim.bf16acc", "sim", "gemm", DType::kF16, "gemm/f16/8x8x8/seed=2"));
  // A waiver narrowed to a case does not apply where the case is not named.
  EXPECT_FALSE(list.match("sim.bf16acc", "sim", "gemm", DType::kF16));
  // Only the waiver's fields are patterns: a '*' in the query is a name.
  EXPECT_FALSE(list.match("*", "sim", "gemm", DType::kF16, id));
  EXPECT_FALSE(list.match("sim", "*", "gemm", DType::kF16, id));
  EXPECT_FALSE(list.match("sim.bf16acc", "sim", "*", DType::kF16, id));
}

TEST(Waivers, StarMatchesAnyAdapterOpAndDtype) {
  json any = narrow_waiver();
  for (const char* key : {"adapter", "op", "dtype"}) any[key] = "*";
  any.erase("case");
  const auto list = one_waiver(any);
  EXPECT_TRUE(list.match("cpu", "cpu.host", "exp", DType::kF32));
  EXPECT_TRUE(list.match("sim", "sim.bf16acc", "gemm", DType::kBF16, "gemm/bf16/4x4x4/seed=1"));
}

// "x/*" matches every id starting with "x/" (the '*' itself is not matched);
// a pattern without a trailing '*' only the id itself.
TEST(Waivers, CasePatternIsTheExactIdOrAPrefixBeforeATrailingStar) {
  json entry = narrow_waiver();
  const auto matches_case = [&](const char* pattern, const std::string& id) {
    entry["case"] = pattern;
    return one_waiver(entry).match("sim.bf16acc", "sim", "gemm", DType::kF16, id).has_value();
  };
  EXPECT_TRUE(matches_case("gemm/f16/8x8x8/*", "gemm/f16/8x8x8/seed=3"));
  EXPECT_TRUE(matches_case("gemm/f16/8x8x8/*", "gemm/f16/8x8x8/"));  // the shortest match
  EXPECT_FALSE(matches_case("gemm/f16/8x8x8/*", "gemm/f16/8x8x8"));  // one character short
  EXPECT_FALSE(matches_case("gemm/f16/8x8x8/*", "gemm/f16/8x8x80/seed=3"));
  EXPECT_TRUE(matches_case("gemm/f16/8x8x8/seed=3", "gemm/f16/8x8x8/seed=3"));
  EXPECT_FALSE(matches_case("gemm/f16/8x8x8/seed=3", "gemm/f16/8x8x8/seed=31"));
  EXPECT_FALSE(matches_case("gemm/f16/8x8x8/seed=3", "gemm/f16/8x8x8/seed="));
  EXPECT_TRUE(matches_case("", "gemm/f16/8x8x8/seed=3"));  // no pattern: every case
}

TEST(Waivers, TheFirstMatchingEntryWins) {
  json first = narrow_waiver(), second = narrow_waiver();
  first.erase("case");
  second["reason"] = "second";
  const auto list =
      WaiverList::from_json({{"schema", "polychip.waivers/1"}, {"waivers", {first, second}}}, "w");
  EXPECT_EQ(list.match("sim.bf16acc", "sim", "gemm", DType::kF16, "gemm/f16/8x8x8/seed=1")->reason,
            "r");
}

// Each malformed entry is refused as "waivers '<file>': waivers[<k>].<field> ...".
TEST(Waivers, MalformedFilesAreRefusedNamingTheFileEntryAndField) {
  const json good = {{"schema", "polychip.waivers/1"}, {"waivers", {narrow_waiver()}}};
  const auto refusal = [](const json& doc) {
    return error_of([&] { WaiverList::from_json(doc, "w.json"); });
  };
  const auto with_entry = [&](const char* key, const json& value) {
    json doc = good;
    doc["waivers"][0][key] = value;
    return refusal(doc);
  };
  const auto starts_with = [](const std::string& message, const std::string& start) {
    return message.compare(0, start.size(), start) == 0;
  };
  EXPECT_EQ(refusal(good), "");
  for (const char* key : {"adapter", "op", "dtype", "kind", "reason"}) {
    const std::string want =
        std::string("waivers 'w.json': waivers[0].") + key + " must be a non-empty string";
    json missing = good;
    missing["waivers"][0].erase(key);
    EXPECT_EQ(refusal(missing), want);
    EXPECT_EQ(with_entry(key, ""), want);
    EXPECT_EQ(with_entry(key, 7), want);
  }
  EXPECT_TRUE(starts_with(with_entry("kind", "skip"), "waivers 'w.json': waivers[0].kind 'skip'"));
  EXPECT_EQ(with_entry("kind", "expected_failure"), "");
  EXPECT_TRUE(
      starts_with(with_entry("op", "expp"), "waivers 'w.json': waivers[0].op 'expp' is not an op"));
  EXPECT_TRUE(starts_with(with_entry("dtype", "f33"), "waivers 'w.json': waivers[0].dtype: "));
  // Optional fields, when present, are strings (a number is no reference).
  EXPECT_EQ(with_entry("reference", 12), "waivers 'w.json': waivers[0].reference must be a string");
  EXPECT_EQ(with_entry("case", true), "waivers 'w.json': waivers[0].case must be a string");
  // A misspelt optional key would widen the waiver to every case: refused.
  EXPECT_EQ(with_entry("cse", "gemm/f16/8x8x8/seed=1"),
            "waivers 'w.json': 'waivers[0]': unknown key 'cse' (known: adapter, op, dtype, kind, "
            "reason, reference, case)");
  json extra = good;
  extra["waiver"] = json::array();
  EXPECT_TRUE(
      starts_with(refusal(extra), "waivers 'w.json': 'the document': unknown key 'waiver'"));
  // A case pattern of another op's cases could never match.
  for (const char* other : {"exp/f16/8/seed=1", "exp/*", "gem/*", "gemmx/*"}) {
    EXPECT_EQ(with_entry("case", other),
              std::string("waivers 'w.json': waivers[0].case '") + other +
                  "' names no case of op 'gemm' (its ids begin 'gemm/')");
  }
  for (const char* of_gemm : {"gemm/*", "gem*", "*", "gemm/f16/*"})
    EXPECT_EQ(with_entry("case", of_gemm), "") << of_gemm;
  json second_bad = good;
  second_bad["waivers"].push_back(1);
  EXPECT_EQ(refusal(second_bad), "waivers 'w.json': waivers[1] must be an object");
  const std::string bad_schema = "waivers 'w.json': must be an object with \"schema\"";
  for (const json& doc : {json{{"schema", "polychip.waivers/2"}, {"waivers", json::array()}},
                          json{{"schema", 1}, {"waivers", json::array()}},
                          json{{"waivers", json::array()}}, json::array()})
    EXPECT_TRUE(starts_with(refusal(doc), bad_schema)) << doc.dump();
  for (const json& doc : {json{{"schema", "polychip.waivers/1"}, {"waivers", json::object()}},
                          json{{"schema", "polychip.waivers/1"}}})
    EXPECT_EQ(refusal(doc), "waivers 'w.json': 'waivers' must be an array") << doc.dump();
}

TEST(Waivers, JsonRoundTripKeepsEveryFieldAndLeavesEmptyOptionalsOut) {
  json entry = narrow_waiver();
  entry["reference"] = "BUG-12";
  const Waiver w = one_waiver(entry).all().at(0);
  EXPECT_EQ(to_json(w), entry);
  Waiver plain = w;
  plain.reference.clear();
  plain.case_pattern.clear();
  EXPECT_FALSE(to_json(plain).contains("reference"));
  EXPECT_FALSE(to_json(plain).contains("case"));
}

TEST(Waivers, ForAdapterListsThoseOfTheAdapterNameOrItsDeviceType) {
  json by_type = narrow_waiver(), by_name = narrow_waiver(), any = narrow_waiver();
  by_name["adapter"] = "cpu";
  any["adapter"] = "*";
  const auto list = WaiverList::from_json(
      {{"schema", "polychip.waivers/1"}, {"waivers", {by_type, by_name, any}}}, "w");
  EXPECT_EQ(list.for_adapter("sim", "sim.bf16acc").size(), 2u);  // by_type, any
  EXPECT_EQ(list.for_adapter("cpu", "cpu.host").size(), 2u);     // by_name, any
  EXPECT_EQ(list.for_adapter("npu", "npu.x").size(), 1u);        // any
  EXPECT_EQ(list.for_adapter("*", "*").size(), 1u);              // names, not patterns
}

TEST(Waivers, FromFileReadsTheFileAndNamesItInErrors) {
  const std::string path = ::testing::TempDir() + "waivers_from_file.json";
  std::ofstream(path) << json{{"schema", "polychip.waivers/1"}, {"waivers", {narrow_waiver()}}};
  const auto list = WaiverList::from_file(path);
  EXPECT_EQ(list.origin(), path);
  EXPECT_EQ(list.all().size(), 1u);
  std::remove(path.c_str());
  EXPECT_EQ(error_of([] { WaiverList::from_file("/nonexistent/w.json"); }),
            "waivers file: cannot open /nonexistent/w.json: No such file or directory");
  // A folder was an internal error (the stream threw from its first read).
  EXPECT_EQ(error_of([] { ToleranceTable::from_file("/tmp"); }),
            "tolerances file: /tmp is a folder, not a file");
}

TEST(Verdicts, NamesRoundTripAndFailuresAreFailCrashTimeout) {
  for (Verdict v : kAllVerdicts) EXPECT_EQ(parse_verdict(verdict_name(v)), v);
  EXPECT_TRUE(is_failure(Verdict::kFail));
  EXPECT_TRUE(is_failure(Verdict::kCrash));
  EXPECT_TRUE(is_failure(Verdict::kTimeout));
  EXPECT_FALSE(is_failure(Verdict::kQualityWarning));
  EXPECT_FALSE(is_failure(Verdict::kWaived));
  EXPECT_FALSE(is_failure(Verdict::kNotSupported));
  EXPECT_THROW(parse_verdict("Passed"), Error);
}

}  // namespace
}  // namespace polychip::precision
