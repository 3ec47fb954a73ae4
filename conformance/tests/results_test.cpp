#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "polychip/error.hpp"
#include "profiles.hpp"
#include "results.hpp"

namespace polychip::conformance {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count_lines_starting(const std::string& text, const std::string& prefix) {
  size_t n = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) n += line.rfind(prefix, 0) == 0;
  return n;
}

AdapterRun make_run(const std::string& name, std::vector<std::string> verdicts) {
  AdapterRun run;
  run.name = name;
  run.info = {{"name", name},
              {"device_type", name},
              {"version", "1"},
              {"abi", "1.0"},
              {"patches", nlohmann::json::array()}};
  int k = 0;
  for (const auto& v : verdicts)
    run.records.push_back({{"id", "exp/f32/4/seed=" + std::to_string(k++)},
                           {"adapter", name},
                           {"op", "exp"},
                           {"dtype", "f32"},
                           {"verdict", v},
                           {"message", "a <b> & \"c\""},
                           {"repro", "polychip certify ..."}});
  return run;
}

TEST(Results, CountsVerdictsAndDecidesPerAdapterAndOverall) {
  CertifyOptions o;
  o.adapters = {"a", "b"};
  SuiteRun suite;
  suite.adapters = {make_run("a", {"Pass", "QualityWarning", "NotSupported", "Waived"}),
                    make_run("b", {"Pass", "Crash"})};
  auto doc = build_results(o, suite, 1.5);
  EXPECT_EQ(doc["schema"], "polychip.results/1");
  EXPECT_EQ(doc["summary"]["Pass"], 2);
  EXPECT_EQ(doc["summary"]["Crash"], 1);
  EXPECT_EQ(doc["summary"]["Timeout"], 0);
  EXPECT_EQ(doc["adapters"][0]["verdict"], "Pass");  // warnings and skips do not fail
  EXPECT_EQ(doc["adapters"][1]["verdict"], "Fail");
  EXPECT_EQ(doc["verdict"], "Fail");
  EXPECT_EQ(doc["cases"].size(), 6u);

  const std::string xml = junit_xml(doc);
  EXPECT_NE(xml.find("<testsuite name=\"a\" tests=\"4\" failures=\"0\" errors=\"0\" skipped=\"2\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<error type=\"Crash\""), std::string::npos);
  EXPECT_NE(xml.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_EQ(xml.find("<b>"), std::string::npos);

  const std::string table = summary_table(doc);
  EXPECT_NE(table.find("overall: Fail"), std::string::npos);
  EXPECT_NE(table.find("Crash"), std::string::npos);
}

TEST(Results, JunitClassnamesKeepOneDotAndCasesTheirTimes) {
  CertifyOptions o;
  SuiteRun suite;
  suite.adapters = {make_run("cpu+sim.faithful", {"Pass"})};
  suite.adapters[0].records[0]["op"] = "all.reduce";
  suite.adapters[0].records[0]["duration_ms"] = 1500.0;
  const std::string xml = junit_xml(build_results(o, suite, 2));
  EXPECT_NE(xml.find("classname=\"cpu_sim_faithful.all_reduce\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("time=\"1.500000\""), std::string::npos) << xml;
}

// How long each adapter took is in results.json and in the summary's last column.
TEST(Results, EachAdaptersTimeIsRecordedAndShown) {
  CertifyOptions o;
  SuiteRun suite;
  suite.adapters = {make_run("cpu", {"Pass"}), make_run("sim.faithful", {"Pass"})};
  suite.adapters[0].seconds = 12.5;
  suite.adapters[1].seconds = 47.25;
  const nlohmann::json doc = build_results(o, suite, 60);
  EXPECT_EQ(doc["adapters"][0]["duration_seconds"], 12.5);
  const std::string table = summary_table(doc);
  EXPECT_NE(table.find("verdict  time (s)"), std::string::npos) << table;
  EXPECT_NE(table.find("Pass         12.5"), std::string::npos) << table;
  EXPECT_NE(table.find("Pass         47.2"), std::string::npos) << table;
}

TEST(Results, EveryVerdictIsCountedEvenWhenNoneOccurred) {
  CertifyOptions o;
  SuiteRun suite;
  suite.adapters = {make_run("a", {"Pass"})};
  auto doc = build_results(o, suite, 1);
  for (const char* v :
       {"Pass", "QualityWarning", "NotSupported", "Waived", "Fail", "Crash", "Timeout"}) {
    EXPECT_TRUE(doc["summary"].contains(v)) << v;
    EXPECT_TRUE(doc["adapters"][0]["summary"].contains(v)) << v;
  }
  EXPECT_TRUE(doc.contains("run"));
  EXPECT_FALSE(doc.contains("suite"));
}

TEST(Profiles, TrainingRequiresF32AndBf16AndNamesWhatIsMissing) {
  const CertificationProfile training = load_profile("", "");
  EXPECT_EQ(training.name, "training");
  EXPECT_TRUE(training.requires_pair("gemm", "bf16"));
  EXPECT_FALSE(training.requires_pair("gemm", "f16"));
  std::vector<nlohmann::json> records = {
      {{"op", "gemm"}, {"dtype", "f32"}, {"verdict", "NotSupported"}, {"message", "no kernel"}},
      {{"op", "gemm"}, {"dtype", "f32"}, {"verdict", "NotSupported"}, {"message", "no kernel"}},
      {{"op", "gemm"}, {"dtype", "f16"}, {"verdict", "NotSupported"}, {"message", "no kernel"}},
      {{"op", "exp"}, {"dtype", "bf16"}, {"verdict", "Pass"}}};
  EXPECT_EQ(enforce_profile(training, records), std::vector<std::string>{"gemm f32"});
  EXPECT_EQ(records[0]["verdict"], "Fail");
  EXPECT_EQ(records[0]["required_by"], "training");
  EXPECT_NE(records[0]["message"].get<std::string>().find("no kernel"), std::string::npos);
  EXPECT_EQ(records[2]["verdict"], "NotSupported");
  EXPECT_EQ(records[3]["verdict"], "Pass");
  EXPECT_TRUE(enforce_profile(load_profile("bring-up", ""), records).empty());
  EXPECT_THROW(load_profile("nosuch", ""), Error);
}

// docs/op-contract.md's "Required ops" table lists every profile of the
// data file, the default marked.
TEST(Profiles, TheOpContractDocListsEveryProfile) {
  const auto profiles = nlohmann::json::parse(slurp(PROFILES_FILE));
  const std::string doc = slurp(OP_CONTRACT_DOC);
  for (const auto& [name, profile] : profiles["profiles"].items()) {
    EXPECT_NE(doc.find("| `" + name + "`"), std::string::npos) << name;
    EXPECT_NO_THROW(load_profile(name, PROFILES_FILE)) << name;
  }
  EXPECT_NE(doc.find("| `" + profiles["default"].get<std::string>() + "` (default)"),
            std::string::npos);
}

TEST(Results, EnvironmentNamesHostOsCpuVersionTime) {
  auto env = environment_json();
  for (const char* k : {"host", "os", "cpu", "polychip_version", "time", "git_commit"})
    EXPECT_TRUE(env.contains(k)) << k;
  EXPECT_EQ(env["time"].get<std::string>().back(), 'Z');
  EXPECT_EQ(env["os"].get<std::string>().rfind("Linux ", 0), 0u) << env["os"];
  // The cpu is /proc/cpuinfo's model name, whole.
  const std::string cpu = env["cpu"];
  EXPECT_NE(slurp("/proc/cpuinfo").find("model name\t: " + cpu + "\n"), std::string::npos) << cpu;
}

// Every testcase of junit.xml says its verdict the way CI servers read it:
// Fail a <failure>, Crash and Timeout an <error>, NotSupported and Waived
// <skipped>, warnings <system-out>, Pass nothing; the totals add up.
TEST(Results, JunitMarksEachVerdictAsCiServersReadIt) {
  CertifyOptions o;
  SuiteRun suite;
  suite.adapters = {make_run("all", {"Pass", "QualityWarning", "Mistrusted", "NotSupported",
                                     "Waived", "Fail", "Crash", "Timeout"})};
  const std::string xml = junit_xml(build_results(o, suite, 1));
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = xml.find(what); at != std::string::npos; at = xml.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<testcase "), 8u);
  EXPECT_EQ(count("<failure "), 1u) << xml;
  EXPECT_EQ(count("<error type=\"Crash\""), 1u) << xml;
  EXPECT_EQ(count("<error type=\"Timeout\""), 1u) << xml;
  EXPECT_EQ(count("<error "), 2u) << xml;
  EXPECT_EQ(count("<skipped message=\"NotSupported: "), 1u) << xml;
  EXPECT_EQ(count("<skipped message=\"Waived: "), 1u) << xml;
  EXPECT_EQ(count("<skipped "), 2u) << xml;
  EXPECT_EQ(count("<system-out>QualityWarning: "), 1u) << xml;
  EXPECT_EQ(count("<system-out>Mistrusted: "), 1u) << xml;
  EXPECT_EQ(count("<system-out>"), 2u) << xml;
  EXPECT_NE(xml.find("<testsuites name=\"polychip certify\" tests=\"8\" failures=\"1\" "
                     "errors=\"2\" skipped=\"2\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testsuite name=\"all\" tests=\"8\" failures=\"1\" errors=\"2\" "
                     "skipped=\"2\""),
            std::string::npos)
      << xml;
}

// XML 1.0 cannot carry most control characters: they become '?', while tab,
// newline and carriage return stay. Class names keep letters, digits, '_'
// and '-'.
TEST(Results, JunitCarriesOnlyWhatXmlAllows) {
  CertifyOptions o;
  SuiteRun suite;
  suite.adapters = {make_run("vendor-x", {"Fail"})};
  suite.adapters[0].records[0]["message"] = std::string("bell\x07 tab\t nl\n cr\r end");
  const std::string xml = junit_xml(build_results(o, suite, 1));
  EXPECT_NE(xml.find("message=\"bell? tab\t nl\n cr\r end\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("classname=\"vendor-x.exp\""), std::string::npos) << xml;
}

// The summary: columns as wide as the longest adapter name, every case that
// did not pass (NotSupported aside) listed with its reproducer, up to 40.
TEST(Results, SummaryListsWhatDidNotPassUpToForty) {
  CertifyOptions o;
  SuiteRun suite;
  std::vector<std::string> verdicts = {"Pass", "NotSupported", "QualityWarning"};
  verdicts.insert(verdicts.end(), 41, "Fail");
  suite.adapters = {make_run("a-rather-long-adapter-name", verdicts), make_run("b", {"Pass"})};
  const std::string table = summary_table(build_results(o, suite, 1));
  EXPECT_EQ(table.rfind("adapter                     Pass", 0), 0u) << table;
  // "b" padded to the longest name (26), then "Pass" right-aligned: "   1".
  EXPECT_NE(table.find("\nb" + std::string(25, ' ') + "     1  "), std::string::npos) << table;
  EXPECT_EQ(count_lines_starting(table, "  QualityWarning "), 1u) << table;
  EXPECT_EQ(count_lines_starting(table, "  Fail "), 39u) << table;  // 40 shown in all
  EXPECT_EQ(count_lines_starting(table, "  Pass "), 0u) << table;
  EXPECT_EQ(count_lines_starting(table, "  NotSupported "), 0u) << table;
  // One heading, right before the first case listed.
  EXPECT_EQ(count_lines_starting(table, "not passing"), 1u) << table;
  EXPECT_NE(table.find("\nnot passing (verdict, reproducer, why):\n  QualityWarning "),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("  ... and 2 more in results.json\n"), std::string::npos) << table;
}

}  // namespace
}  // namespace polychip::conformance
