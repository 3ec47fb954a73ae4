// Acceptance tests of `polychip certify`, through the real binary:
//  - quick certification of cpu and sim.faithful passes, results.json follows
//    the schema, junit.xml is written;
//  - each defective sim profile fails on the ops its defect touches and only
//    there (conformance/data/sim_defects.json), and a failure's reproducer
//    re-runs exactly that case;
//  - a kernel that aborts or hangs yields Crash / Timeout and the run goes on;
//  - a run killed midway leaves no half-written results file;
//  - usage errors exit with 2.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Result {
  int exit_code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class CertifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("polychip_certify_test_{}_{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Runs the polychip binary with `args` (shell words) and extra environment.
  Result certify(const std::string& args, const std::string& env = "") {
    const fs::path out = dir_ / "stdout", err = dir_ / "stderr";
    std::string cmd =
        fmt::format("env -u POLYCHIP_PATCHES -u POLYCHIP_ADAPTERS {} '{}' {} > '{}' 2> '{}'", env,
                    POLYCHIP_CLI, args, out.string(), err.string());
    int status = std::system(cmd.c_str());
    Result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  json results(const std::string& sub) { return json::parse(slurp(dir_ / sub / "results.json")); }
  std::string out_dir(const std::string& sub) { return (dir_ / sub).string(); }

  fs::path dir_;
};

// Field-by-field check of the results.json schema (docs/results-schema.md).
void expect_schema(const json& r) {
  EXPECT_EQ(r["schema"], "polychip.results/1");
  for (const char* k : {"host", "os", "cpu", "polychip_version", "time"})
    EXPECT_TRUE(r["environment"].contains(k)) << k;
  EXPECT_TRUE(r["environment"].contains("git_commit"));
  ASSERT_TRUE(r["adapters"].is_array());
  for (const auto& a : r["adapters"])
    for (const char* k : {"name", "version", "abi", "device_type", "patches", "summary", "verdict"})
      EXPECT_TRUE(a.contains(k)) << k << " in " << a.dump();
  ASSERT_TRUE(r["cases"].is_array());
  int total = 0;
  for (const auto& [verdict, n] : r["summary"].items()) total += n.get<int>();
  EXPECT_EQ(total, static_cast<int>(r["cases"].size()));
  for (const auto& c : r["cases"]) {
    for (const char* k : {"id", "suite", "adapter", "op", "dtype", "verdict", "repro"})
      ASSERT_TRUE(c.contains(k)) << k << " in " << c.dump();
    const std::string v = c["verdict"];
    if (v == "Pass" || v == "Fail" || v == "QualityWarning" || v == "Waived") {
      if (!c.contains("message") || c["message"].get<std::string>().rfind("harness", 0) != 0) {
        EXPECT_TRUE(c.contains("metrics")) << c["id"];
        EXPECT_TRUE(c.contains("tolerance")) << c["id"];
      }
    }
    if (v != "Pass") {
      EXPECT_TRUE(c.contains("message")) << c["id"];
    }
  }
  EXPECT_TRUE(r.contains("verdict"));
}

TEST_F(CertifyTest, QuickPassesOnCpuAndSimFaithful) {
  auto r =
      certify(fmt::format("certify --suite precision --level quick --adapters cpu,sim.faithful "
                          "--out '{}' --no-progress",
                          out_dir("run")));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json res = results("run");
  expect_schema(res);
  EXPECT_EQ(res["verdict"], "Pass");
  ASSERT_EQ(res["adapters"].size(), 2u);
  EXPECT_EQ(res["adapters"][0]["name"], "cpu");
  EXPECT_EQ(res["adapters"][1]["device_type"], "sim.faithful");
  for (const char* bad : {"Fail", "Crash", "Timeout"}) EXPECT_EQ(res["summary"][bad], 0) << bad;
  EXPECT_GT(res["summary"]["Pass"].get<int>(), 300);
  for (const auto& c : res["cases"]) {
    // A waived case carries its waiver; the NVIDIA emulation itself stays
    // within every tolerance the suite applies, except where waived.
    if (c["verdict"] == "Waived") {
      EXPECT_TRUE(c.contains("waiver")) << c["id"];
    }
    // (Special values excepted: there the emulation follows CUDA's NaN
    // behaviour, which the oracle's limits need not share.)
    const std::string id = c["id"];
    if (c.contains("metrics") && c["metrics"].value("nvidia_within_tolerance", true) == false &&
        id.find("special") == std::string::npos) {
      EXPECT_EQ(c["verdict"], "Waived") << "NVIDIA emulation beyond tolerance: " << id;
    }
  }
  const std::string junit = slurp(dir_ / "run" / "junit.xml");
  EXPECT_NE(junit.find("<testsuites"), std::string::npos);
  EXPECT_NE(junit.find("<testsuite name=\"sim.faithful\""), std::string::npos);
  EXPECT_NE(r.out.find("overall: Pass"), std::string::npos) << r.out;
}

TEST_F(CertifyTest, DefectiveSimProfilesFailOnTheirOpsOnlyWithReproducers) {
  const json defects = json::parse(slurp(SIM_DEFECTS_FILE))["defects"];
  std::string list;
  for (const auto& [profile, ops] : defects.items()) list += (list.empty() ? "" : ",") + profile;
  auto r =
      certify(fmt::format("certify --suite precision --level quick --adapters {} --out '{}' "
                          "--no-progress",
                          list, out_dir("run")));
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  json res = results("run");
  expect_schema(res);
  EXPECT_EQ(res["verdict"], "Fail");
  std::map<std::string, std::set<std::string>> failing;
  json first_failure;
  for (const auto& c : res["cases"]) {
    if (c["verdict"] != "Fail") continue;
    failing[c["adapter"]].insert(c["op"]);
    if (first_failure.is_null()) first_failure = c;
    // A reproducer for exactly this case and adapter, and the worst element.
    EXPECT_EQ(c["repro"], fmt::format("polychip certify --suite precision --adapters {} --case {}",
                                      c["adapter"].get<std::string>(), c["id"].get<std::string>()));
    ASSERT_TRUE(c.contains("worst")) << c["id"];
    EXPECT_TRUE(c["worst"].contains("device") && c["worst"].contains("exact")) << c["id"];
    // The inputs behind the worst element, in hex float.
    ASSERT_TRUE(c["worst"].contains("inputs")) << c["id"];
    if (c["op"] == "gemm") {
      EXPECT_TRUE(c["worst"]["inputs"].contains("c")) << c["worst"].dump();
      bool has_row = false;
      for (const auto& [k, v] : c["worst"]["inputs"].items()) has_row |= k.rfind("a row", 0) == 0;
      EXPECT_TRUE(has_row) << c["worst"].dump();
    }
  }
  for (const auto& a : res["adapters"]) EXPECT_EQ(a["verdict"], "Fail") << a["name"];
  for (const auto& [profile, ops] : defects.items()) {
    std::set<std::string> expected(ops.begin(), ops.end());
    EXPECT_EQ(failing[profile], expected) << profile << " must fail on exactly its defect's ops";
  }
  for (const char* bad : {"Crash", "Timeout"}) EXPECT_EQ(res["summary"][bad], 0) << bad;

  // The reproducer re-runs exactly that one case, with the same verdict.
  ASSERT_FALSE(first_failure.is_null());
  std::string repro = first_failure["repro"];
  ASSERT_EQ(repro.rfind("polychip ", 0), 0u);
  auto again =
      certify(fmt::format("{} --out '{}' --no-progress", repro.substr(9), out_dir("repro")));
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  json one = results("repro");
  ASSERT_EQ(one["cases"].size(), 1u);
  EXPECT_EQ(one["cases"][0]["id"], first_failure["id"]);
  EXPECT_EQ(one["cases"][0]["verdict"], "Fail");
  EXPECT_EQ(one["cases"][0]["worst"], first_failure["worst"]);
}

TEST_F(CertifyTest, CrashAndHangBecomeVerdictsAndTheRunCompletes) {
  auto r =
      certify(fmt::format("certify --level quick --adapters sim.faithful --timeout 3 --out '{}' "
                          "--no-progress",
                          out_dir("run")),
              fmt::format("POLYCHIP_PATCHES='{}'", CRASH_PATCH_LIBRARY));
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  json res = results("run");
  expect_schema(res);
  int crashes = 0, timeouts = 0, passes = 0;
  for (const auto& c : res["cases"]) {
    const std::string v = c["verdict"], op = c["op"], dt = c["dtype"];
    if (op == "exp" && dt == "f32") {
      EXPECT_EQ(v, "Crash") << c["id"];
      EXPECT_NE(c["message"].get<std::string>().find("SIGABRT"), std::string::npos) << c["message"];
      ++crashes;
    } else if (op == "exp" && dt == "f16") {
      EXPECT_EQ(v, "Timeout") << c["id"];
      ++timeouts;
    } else {
      EXPECT_TRUE(v == "Pass" || v == "Waived") << c["id"] << " " << v;
      passes += v == "Pass";
    }
  }
  EXPECT_GE(crashes, 2);
  EXPECT_GE(timeouts, 1);
  EXPECT_GT(passes, 150);  // every case after a crash still ran
  const auto& a = res["adapters"][0];
  EXPECT_EQ(a["summary"]["Crash"], crashes);
  EXPECT_EQ(a["worker_starts"].get<int>(), 1 + crashes + timeouts);
  ASSERT_EQ(a["patches"].size(), 2u);  // active patches are recorded
  EXPECT_EQ(a["patches"][0]["op"], "exp");
}

TEST_F(CertifyTest, KilledRunLeavesThePreviousResultsIntact) {
  // A complete earlier run.
  auto first =
      certify(fmt::format("certify --adapters cpu --case exp/f32/1/seed=1 --out '{}' "
                          "--no-progress",
                          out_dir("run")));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string before = slurp(dir_ / "run" / "results.json");
  // A long run into the same folder, killed midway.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::unsetenv("POLYCHIP_PATCHES");
    int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::execl(POLYCHIP_CLI, POLYCHIP_CLI, "certify", "--level", "standard", "--adapters",
            "cpu,sim.faithful,sim.bf16acc", "--out", out_dir("run").c_str(), nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ::kill(-pid, SIGKILL);  // the supervisor and its worker
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed";
  EXPECT_EQ(slurp(dir_ / "run" / "results.json"), before);
  EXPECT_NO_THROW(json::parse(slurp(dir_ / "run" / "results.json")));
  for (const auto& entry : fs::directory_iterator(dir_ / "run"))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
}

TEST_F(CertifyTest, UsageErrorsExitWithTwo) {
  auto r = certify(fmt::format("certify --adapters no_such_adapter --out '{}'", out_dir("a")));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no_such_adapter"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "a" / "results.json"));
  r = certify(fmt::format("certify --adapters cpu --level fast --out '{}'", out_dir("b")));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = certify(
      fmt::format("certify --adapters cpu --case exp/f32/4/seed=x --out '{}'", out_dir("c")));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("seed="), std::string::npos) << r.err;
  r = certify(fmt::format("certify --out '{}'", out_dir("d")));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = certify(fmt::format("certify --adapters cpu --timeout 0 --out '{}'", out_dir("e")));
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

// The comm suite: one rank per --adapters entry, every collective and dtype,
// bitwise checked; recorded in the same results schema.
TEST_F(CertifyTest, CommSuitePassesAcrossAdaptersAndIsRecorded) {
  auto r = certify(fmt::format("certify --suite comm --level quick --adapters cpu,sim.faithful "
                               "--no-progress --out '{}'",
                               out_dir("comm")));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json j = results("comm");
  expect_schema(j);
  EXPECT_EQ(j["verdict"], "Pass");
  ASSERT_EQ(j["adapters"].size(), 1u);
  EXPECT_EQ(j["adapters"][0]["device_type"], "cpu.host+sim.faithful");
  std::set<std::string> collectives, dtypes;
  for (const auto& c : j["cases"]) {
    EXPECT_EQ(c["suite"], "comm");
    EXPECT_EQ(c["metrics"]["wrong"], 0);
    collectives.insert(c["op"].get<std::string>());
    dtypes.insert(c["dtype"].get<std::string>());
  }
  for (const char* c : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                        "all_to_all"})
    EXPECT_TRUE(collectives.count(c)) << c;
  EXPECT_EQ(dtypes.size(), 6u);
  EXPECT_TRUE(fs::exists(dir_ / "comm" / "junit.xml"));
}

TEST_F(CertifyTest, CommSuiteNeedsTwoRanks) {
  auto r = certify(fmt::format("certify --suite comm --adapters cpu --out '{}'", out_dir("one")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("at least two"), std::string::npos) << r.err;
}

}  // namespace
