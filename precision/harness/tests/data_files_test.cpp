// The shipped data files load, and malformed ones are refused naming the entry.
#include <gtest/gtest.h>

#include "polychip/error.hpp"
#include "tolerance.hpp"
#include "verdict.hpp"
#include "waivers.hpp"

namespace polychip::precision {
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
  EXPECT_DOUBLE_EQ(t.lookup("gemm", DType::kF64).rtol, 1e-7);
  EXPECT_GT(t.lookup("gemm:tf32", DType::kF32).rtol, 1e-4);
  EXPECT_EQ(t.lookup("argmax", DType::kI64).mode, ToleranceMode::kExact);
}

TEST(Tolerances, MalformedTablesAreRefused) {
  json good = {{"schema", "polychip.tolerances/1"},
               {"defaults", {{"rtol", {{"f32", 1e-6}}}, {"atol_factor", {{"f32", 1e-7}}}}}};
  EXPECT_NO_THROW(ToleranceTable::from_json(good, "t"));
  json bad_schema = good;
  bad_schema["schema"] = "x";
  EXPECT_NE(error_of([&] { ToleranceTable::from_json(bad_schema, "t"); }).find("schema"),
            std::string::npos);
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
