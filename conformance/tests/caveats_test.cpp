// What a precision verdict does not hide (issue 36): a bring-up profile, a
// waived failure and a wholesale waiver of a required pair are caveats (a
// Pass under them is not certified), and an op x dtype that is supported for
// some cases only is reported as partial support.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "caveats.hpp"
#include "polychip/op_contract.hpp"
#include "profiles.hpp"
#include "results.hpp"

namespace polychip::conformance {
namespace {

nlohmann::json record(const std::string& op, const std::string& dtype, const std::string& verdict) {
  static int k = 0;
  return {{"id", op + "/" + dtype + "/4/seed=" + std::to_string(++k)},
          {"adapter", "cpu"},
          {"op", op},
          {"dtype", dtype},
          {"verdict", verdict},
          {"message", verdict == "Pass" ? "" : "why"},
          {"repro", "polychip certify ..."}};
}

AdapterRun cpu_run(std::vector<nlohmann::json> records) {
  AdapterRun run;
  run.name = "cpu";
  run.info = {{"name", "cpu"},
              {"device_type", "cpu.host"},
              {"version", "1"},
              {"abi", "1.0"},
              {"patches", nlohmann::json::array()}};
  run.records = std::move(records);
  return run;
}

precision::WaiverList waivers(const nlohmann::json& entries) {
  return precision::WaiverList::from_json({{"schema", "polychip.waivers/1"}, {"waivers", entries}},
                                          "test");
}

nlohmann::json waiver(const std::string& op, const std::string& dtype, const std::string& kind,
                      const std::string& case_pattern = "") {
  nlohmann::json w = {
      {"adapter", "cpu"}, {"op", op}, {"dtype", dtype}, {"kind", kind}, {"reason", "test"}};
  if (!case_pattern.empty()) w["case"] = case_pattern;
  return w;
}

// A record that `w` waived, as the case runner writes it.
nlohmann::json waived(nlohmann::json r, const precision::Waiver& w) {
  r["waived_verdict"] = r["verdict"];
  r["verdict"] = "Waived";
  r["waiver"] = precision::to_json(w);
  return r;
}

nlohmann::json results_of(SuiteRun& suite, const CertificationProfile& profile,
                          const std::string& waivers_path) {
  suite.caveats = precision_caveats(profile, suite, waivers_path);
  CertifyOptions o;
  o.waivers_path = waivers_path;
  return build_results(o, suite, 1);
}

TEST(Caveats, ABringUpRunIsNotACertificationAndNamesWhatTrainingWouldFail) {
  const CertificationProfile bring_up = load_profile("bring-up", "");
  EXPECT_FALSE(bring_up.certifies);
  EXPECT_TRUE(load_profile("", "").certifies);
  std::vector<nlohmann::json> records;
  for (int i = 0; i < 19; ++i) records.push_back(record("tanh", "f32", "NotSupported"));
  records.push_back(record("tanh", "f16", "NotSupported"));  // optional in training too
  records.push_back(record("exp", "f32", "Pass"));
  SuiteRun suite;
  suite.adapters = {cpu_run(records)};
  suite.adapters[0].missing_required = enforce_profile(bring_up, suite.adapters[0].records);
  const nlohmann::json doc = results_of(suite, bring_up, "");
  EXPECT_EQ(doc["verdict"], "Pass");
  EXPECT_EQ(doc["certified"], false);
  ASSERT_EQ(doc["caveats"].size(), 1u) << doc["caveats"];
  EXPECT_EQ(doc["caveats"][0],
            "profile 'bring-up' (an adapter under construction: nothing is required, "
            "NotSupported never fails) is not a certification: certify under profile 'training' "
            "for one, which requires what 19 cases refused here as NotSupported: cpu: tanh f32 "
            "(19 cases)");
  const std::string table = summary_table(doc);
  EXPECT_NE(table.find("caveats (a verdict under them is not a polychip certification):\n  - "
                       "profile 'bring-up'"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("\noverall: Pass (with 1 caveat)\n"), std::string::npos) << table;

  // Everything supported: still no certification, and nothing to name.
  SuiteRun clean;
  clean.adapters = {cpu_run({record("exp", "f32", "Pass")})};
  const nlohmann::json clean_doc = results_of(clean, bring_up, "");
  ASSERT_EQ(clean_doc["caveats"].size(), 1u);
  EXPECT_EQ(clean_doc["caveats"][0].get<std::string>().find("which requires"), std::string::npos);
  // The same run under the training profile is certified.
  EXPECT_EQ(results_of(clean, load_profile("", ""), "")["certified"], true);
}

TEST(Caveats, FailuresAVendorsWaiverFileWaivesAreCountedListedAndACaveat) {
  const auto list = waivers(
      {waiver("exp", "f32", "waiver", "exp/f32/4/*"), waiver("log", "f16", "expected_failure")});
  SuiteRun suite;
  suite.waivers = list;
  suite.adapters = {cpu_run({waived(record("exp", "f32", "Fail"), list.all()[0]),
                             waived(record("exp", "f32", "Fail"), list.all()[0]),
                             waived(record("log", "f16", "Fail"), list.all()[1]),
                             record("gemm", "f32", "Pass")})};
  const CertificationProfile training = load_profile("", "");
  const nlohmann::json doc = results_of(suite, training, "vendor.json");
  EXPECT_EQ(doc["verdict"], "Pass");
  EXPECT_EQ(doc["certified"], false);
  EXPECT_EQ(doc["summary"]["Waived"], 3);
  ASSERT_EQ(doc["waivers"].size(), 2u);
  EXPECT_EQ(doc["waivers"][0]["cases_waived"], 2);
  EXPECT_EQ(doc["waivers"][1]["cases_waived"], 1);
  ASSERT_EQ(doc["caveats"].size(), 1u) << doc["caveats"];  // narrowed, f16 optional: no blanket
  EXPECT_EQ(doc["caveats"][0],
            "the waivers of vendor.json turn 3 failing cases into Waived (1 of them expected "
            "failures, known bugs): cpu: exp f32 (2 cases), cpu: log f16 (1 case) "
            "(cases[].waiver, waivers[].cases_waived)");
  const std::string table = summary_table(doc);
  EXPECT_NE(table.find("  Waived         polychip certify"), std::string::npos) << table;

  // The built-in file's permanent waivers are polychip's own word: no
  // caveat; its expected failures (known bugs) are one.
  SuiteRun accepted;
  accepted.waivers = list;
  accepted.adapters = {cpu_run({waived(record("exp", "f32", "Fail"), list.all()[0])})};
  const nlohmann::json accepted_doc = results_of(accepted, training, "");
  EXPECT_EQ(accepted_doc["caveats"], nlohmann::json::array());
  EXPECT_EQ(accepted_doc["certified"], true);
  EXPECT_EQ(results_of(suite, training, "")["caveats"],
            nlohmann::json::array({"1 failing case is Waived as expected failures (known bugs) of "
                                   "polychip's built-in waivers: cpu: log f16 (1 case) "
                                   "(cases[].waiver)"}));
}

TEST(Caveats, AVendorsWaiverOfEveryCaseOfARequiredPairIsACaveatUsedOrNot) {
  const CertificationProfile training = load_profile("", "");
  for (const auto& [entry, pairs] : std::vector<std::pair<nlohmann::json, std::string>>{
           {waiver("exp", "*", "expected_failure"),
            "2 op x dtype pairs that profile 'training' "
            "requires: cpu: exp bf16, cpu: exp f32"},
           {waiver("exp", "f32", "waiver", "exp/f32/*"),
            "1 op x dtype pair that profile 'training' requires: cpu: exp f32"},
           {waiver("exp", "*", "waiver", "exp/*"), "2 op x dtype pairs"}}) {
    SuiteRun suite;
    suite.waivers = waivers(nlohmann::json::array({entry}));
    suite.adapters = {cpu_run({record("exp", "f32", "Pass")})};
    const nlohmann::json doc = results_of(suite, training, "vendor.json");
    EXPECT_EQ(doc["verdict"], "Pass");
    EXPECT_EQ(doc["certified"], false) << entry;
    ASSERT_EQ(doc["caveats"].size(), 1u) << entry;
    const std::string caveat = doc["caveats"][0];
    EXPECT_EQ(
        caveat.rfind(
            "the waivers of vendor.json waive every case, whatever its result, of " + pairs, 0),
        0u)
        << caveat;
    EXPECT_NE(caveat.find("(waivers[]); those pairs are not certified"), std::string::npos);
  }
  // Every op in every required dtype: named in part, counted whole.
  SuiteRun all;
  all.waivers = waivers(nlohmann::json::array({waiver("*", "*", "waiver")}));
  all.adapters = {cpu_run({})};
  const std::string caveat = results_of(all, training, "vendor.json")["caveats"][0];
  EXPECT_NE(caveat.find(fmt::format("of {} op x dtype pairs", 2 * op_contract().size())),
            std::string::npos)
      << caveat;
  EXPECT_NE(caveat.find(fmt::format(" and {} more (waivers[])", 2 * op_contract().size() - 4)),
            std::string::npos)
      << caveat;
  // Narrowed to some cases, optional dtypes, or another adapter: no caveat.
  for (const nlohmann::json& entry : {waiver("exp", "f32", "waiver", "exp/f32/4/seed=1"),
                                      waiver("exp", "f32", "waiver", "exp/f32/4*"),
                                      waiver("*", "f16", "waiver"),
                                      {{"adapter", "sim.ftz"},
                                       {"op", "exp"},
                                       {"dtype", "*"},
                                       {"kind", "waiver"},
                                       {"reason", "x"}}}) {
    SuiteRun suite;
    suite.waivers = waivers(nlohmann::json::array({entry}));
    suite.adapters = {cpu_run({record("exp", "f32", "Pass")})};
    EXPECT_EQ(results_of(suite, training, "vendor.json")["caveats"], nlohmann::json::array())
        << entry;
  }
  // Under a profile that requires nothing, no pair is required (the
  // profile's own caveat says the run certifies nothing).
  SuiteRun bring_up;
  bring_up.waivers = waivers(nlohmann::json::array({waiver("exp", "*", "expected_failure")}));
  bring_up.adapters = {cpu_run({record("exp", "f32", "Pass")})};
  EXPECT_EQ(results_of(bring_up, load_profile("bring-up", ""), "vendor.json")["caveats"].size(),
            1u);
}

TEST(PartialSupport, APairRunForSomeCasesAndRefusedForOthersIsReportedAndFailsWhereRequired) {
  const CertificationProfile training = load_profile("", "");
  std::vector<nlohmann::json> records = {
      record("exp", "f16", "Pass"),         record("exp", "f16", "NotSupported"),
      record("exp", "f16", "NotSupported"), record("exp", "f32", "Pass"),
      record("exp", "f32", "NotSupported"), record("log", "f16", "NotSupported"),
      record("cast", "f32", "Pass"),        record("cast", "f32", "NotSupported")};
  // cast f32 -> f8 on a device without f8: the dtype is missing, not the pair.
  records.back()["unsupported_dtype"] = "f8e4m3";
  AdapterRun run = cpu_run(records);
  run.partial_support = partial_support(training, run.records);
  EXPECT_EQ(run.partial_support, nlohmann::json::parse(R"([
      {"op": "exp", "dtype": "f16", "cases": 3, "not_supported": 2, "required": false},
      {"op": "exp", "dtype": "f32", "cases": 2, "not_supported": 1, "required": true}])"));
  run.missing_required = enforce_profile(training, run.records);
  EXPECT_EQ(run.missing_required, (std::vector<std::string>{"cast f32", "exp f32"}));
  EXPECT_EQ(run.records[4]["verdict"], "Fail");
  EXPECT_EQ(run.records[4]["message"],
            "NotSupported, but profile 'training' requires exp in f32 (partial support: 1 other "
            "case of it ran): why");
  EXPECT_EQ(run.records[1]["verdict"], "NotSupported");  // f16 is optional

  SuiteRun suite;
  suite.adapters = {run};
  suite.run_fields = {{"profile", "training"}};
  const nlohmann::json doc = build_results(CertifyOptions{}, suite, 1);
  EXPECT_EQ(doc["adapters"][0]["partial_support"], run.partial_support);
  const std::string table = summary_table(doc);
  EXPECT_NE(table.find("  partial support (NotSupported for some cases, run for others): exp f16 "
                       "(2 of 3 cases NotSupported), exp f32 (1 of 2 cases NotSupported; "
                       "required by profile training: Fail)\n"),
            std::string::npos)
      << table;
  // Nothing partial: no field, no line.
  SuiteRun whole;
  whole.adapters = {cpu_run({record("exp", "f32", "Pass"), record("log", "f16", "NotSupported")})};
  whole.adapters[0].partial_support = partial_support(training, whole.adapters[0].records);
  const nlohmann::json whole_doc = build_results(CertifyOptions{}, whole, 1);
  EXPECT_FALSE(whole_doc["adapters"][0].contains("partial_support"));
  EXPECT_EQ(summary_table(whole_doc).find("partial support"), std::string::npos);
}

TEST(Waivers, WaivesEveryCaseOfAPairOnlyWithoutACaseOrWithAPrefixOfThePairsIds) {
  auto w = [](const nlohmann::json& entry) {
    return waivers(nlohmann::json::array({entry})).all()[0];
  };
  EXPECT_TRUE(precision::waives_every_case_of(w(waiver("exp", "*", "waiver")), "exp", "f32"));
  EXPECT_TRUE(precision::waives_every_case_of(w(waiver("*", "f32", "waiver")), "exp", "f32"));
  EXPECT_FALSE(precision::waives_every_case_of(w(waiver("*", "f32", "waiver")), "exp", "bf16"));
  EXPECT_FALSE(precision::waives_every_case_of(w(waiver("log", "*", "waiver")), "exp", "f32"));
  EXPECT_TRUE(
      precision::waives_every_case_of(w(waiver("exp", "*", "waiver", "exp/*")), "exp", "bf16"));
  EXPECT_TRUE(precision::waives_every_case_of(w(waiver("exp", "f32", "waiver", "exp/f32/*")), "exp",
                                              "f32"));
  EXPECT_FALSE(
      precision::waives_every_case_of(w(waiver("exp", "*", "waiver", "exp/f32/*")), "exp", "bf16"));
  EXPECT_FALSE(precision::waives_every_case_of(
      w(waiver("exp", "f32", "waiver", "exp/f32/1000/seed=1")), "exp", "f32"));
  EXPECT_FALSE(precision::waives_every_case_of(w(waiver("exp", "f32", "waiver", "exp/f32/1*")),
                                               "exp", "f32"));
}

}  // namespace
}  // namespace polychip::conformance
