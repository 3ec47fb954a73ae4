// The certify worker in this process, on the cpu adapter: the protocol lines
// it writes (hello with the adapter's description and its patches, begin and
// case per case, done), the fatal line a bad request gets, the cases a run
// selects and the reproducer's environment and shell quoting.
#include "worker.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "supervisor.hpp"

namespace polychip::conformance {
namespace {

using nlohmann::json;

constexpr const char* kCase = "exp/f32/4/seed=1";

// run_worker's return value and the lines it wrote to its result fd.
struct WorkerOutput {
  int exit_code = -1;
  std::vector<json> lines;
};
WorkerOutput run_worker_here(const WorkerOptions& given) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  WorkerOptions o = given;
  o.result_fd = fds[1];
  WorkerOutput out;
  // Left over from an interrupted call: a write that succeeded is not
  // written again, whatever errno held.
  errno = EINTR;
  out.exit_code = run_worker(o);  // (a few lines: far less than a pipe holds)
  ::close(fds[1]);
  std::string text;
  char chunk[4096];
  for (ssize_t n; (n = ::read(fds[0], chunk, sizeof chunk)) > 0;)
    text.append(chunk, static_cast<size_t>(n));
  ::close(fds[0]);
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    out.lines.push_back(json::parse(text.substr(at, nl - at)));
  return out;
}
WorkerOptions on_cpu(size_t first) {
  WorkerOptions o;
  o.adapter = "cpu";
  o.case_id = kCase;
  o.first = first;
  return o;
}

TEST(Worker, SaysHelloThenBeginAndCaseForEachCaseThenDone) {
  const WorkerOutput out = run_worker_here(on_cpu(0));
  EXPECT_EQ(out.exit_code, 0);
  ASSERT_EQ(out.lines.size(), 4u);
  const json& hello = out.lines[0];
  EXPECT_EQ(hello["event"], "hello");
  EXPECT_EQ(hello["cases"], 1);
  const json& a = hello["adapter"];
  EXPECT_EQ(a["name"], "cpu");
  EXPECT_EQ(a["adapter"], "cpu");
  EXPECT_EQ(a["device_type"], "cpu.host");
  // The cpu adapter's own entry (not another adapter's): what results.json
  // records for it.
  const auto& adapters = Runtime::global().adapters();
  const auto cpu = std::find_if(adapters.begin(), adapters.end(),
                                [](const auto& info) { return info.name == "cpu"; });
  ASSERT_NE(cpu, adapters.end());
  EXPECT_EQ(a["version"], cpu->version);
  EXPECT_EQ(a["vendor"], cpu->vendor);
  EXPECT_EQ(a["abi"], fmt::format("{}.{}", cpu->abi_major, cpu->abi_minor));
  EXPECT_EQ(a["origin"], cpu->origin);
  EXPECT_NE(std::find(a["supported_dtypes"].begin(), a["supported_dtypes"].end(), "f32"),
            a["supported_dtypes"].end());
  EXPECT_EQ(a["patches"], json::array());
  EXPECT_EQ(out.lines[1], json({{"event", "begin"}, {"index", 0}, {"id", kCase}}));
  EXPECT_EQ(out.lines[2]["event"], "case");
  EXPECT_EQ(out.lines[2]["index"], 0);
  EXPECT_EQ(out.lines[2]["record"]["id"], kCase);
  EXPECT_EQ(out.lines[2]["record"]["verdict"], "Pass");
  EXPECT_EQ(out.lines[3], json({{"event", "done"}}));
}

// A worker restarted after the last case (a supervisor resuming) runs none.
TEST(Worker, StartingPastTheLastCaseRunsNone) {
  const WorkerOutput out = run_worker_here(on_cpu(1));
  EXPECT_EQ(out.exit_code, 0);
  ASSERT_EQ(out.lines.size(), 2u);
  EXPECT_EQ(out.lines[0]["event"], "hello");
  EXPECT_EQ(out.lines[1], json({{"event", "done"}}));
}

// Only the patches of the certified device's type are its patches.
TEST(Worker, HelloListsThePatchesOfTheDevicesTypeOnly) {
  Dispatcher& d = Runtime::global().dispatcher();
  polychip_kernel_fn never_called = [](const polychip_kernel_args*) -> polychip_status {
    return POLYCHIP_INTERNAL;
  };
  const uint64_t mine = d.patch("cpu.host", "exp", std::nullopt, never_called, "worker_test");
  const uint64_t other = d.patch("sim.faithful", "log", std::nullopt, never_called, "worker_test");
  const WorkerOutput out = run_worker_here(on_cpu(1));  // (runs no case)
  d.restore(mine);
  d.restore(other);
  ASSERT_FALSE(out.lines.empty());
  EXPECT_EQ(out.lines[0]["adapter"]["patches"],
            json::parse(R"([{"op":"exp","signature":"*","origin":"worker_test"}])"));
}

// A request the worker cannot serve: one fatal line, exit code 1; "usage"
// when the request itself was wrong (certify then exits with 2).
struct BadRequest {
  const char* what;
  const char* adapter;
  const char* level;
  const char* tolerances;
  const char* waivers;
  const char* named;  // the message names it
};
const BadRequest kBadRequests[] = {
    {"unknown adapter", "no_such_adapter", "quick", "", "", "no_such_adapter"},
    {"unknown level", "cpu", "fast", "", "", "fast"},
    {"missing tolerances file", "cpu", "quick", "/nonexistent/t.json", "", "/nonexistent/t.json"},
    {"missing waivers file", "cpu", "quick", "", "/nonexistent/w.json", "/nonexistent/w.json"},
};

TEST(Worker, ABadRequestGetsOneFatalLineNamingWhatIsWrong) {
  for (const BadRequest& b : kBadRequests) {
    SCOPED_TRACE(b.what);
    WorkerOptions o;
    o.adapter = b.adapter;
    o.level = b.level;
    o.tolerances_path = b.tolerances;
    o.waivers_path = b.waivers;
    const WorkerOutput out = run_worker_here(o);
    EXPECT_EQ(out.exit_code, 1);
    ASSERT_EQ(out.lines.size(), 1u);
    EXPECT_EQ(out.lines[0]["event"], "fatal");
    EXPECT_EQ(out.lines[0]["usage"], true);
    EXPECT_NE(out.lines[0].value("message", "").find(b.named), std::string::npos)
        << out.lines[0].dump();
  }
}

// Its supervisor gone (the pipe's read end closed) and SIGPIPE ignored, as
// a parent can leave it: the worker exits with code 3 at its first line
// instead of writing on into the broken pipe. (In a child process: the exit
// is the point.)
TEST(Worker, AWorkerWhoseSupervisorIsGoneExitsWithCode3) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_IGN);
    int fds[2];
    if (::pipe(fds) != 0) ::_exit(100);
    ::close(fds[0]);
    WorkerOptions o;
    o.level = "fast";  // a fatal line at once, before any adapter is loaded
    o.result_fd = fds[1];
    ::_exit(run_worker(o) + 100);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 3);
}

TEST(Worker, SelectCasesGivesTheLevelsListOrTheOneCase) {
  EXPECT_GT(select_cases("precision", "quick", std::nullopt).size(), 100u);
  const auto one = select_cases("precision", "quick", std::string(kCase));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(precision::case_id(one[0]), kCase);
  try {
    select_cases("comm", "quick", std::nullopt);
    ADD_FAILURE() << "an unknown suite was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(e.message(), "unknown suite 'comm' (available: precision)");
  }
}

// Sets the reproducer's environment variables for one test, restoring them.
class ReproEnvironment : public ::testing::Test {
 protected:
  static constexpr const char* kNames[] = {"POLYCHIP_ADAPTER_PATH", "POLYCHIP_ADAPTERS",
                                           "POLYCHIP_PATCHES", "POLYCHIP_HOST_FALLBACK"};
  ReproEnvironment() {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      saved_.emplace_back(value ? std::optional<std::string>(value) : std::nullopt);
      ::unsetenv(name);
    }
  }
  ~ReproEnvironment() override {
    for (size_t i = 0; i < saved_.size(); ++i)
      if (saved_[i])
        ::setenv(kNames[i], saved_[i]->c_str(), 1);
      else
        ::unsetenv(kNames[i]);
  }
  std::vector<std::optional<std::string>> saved_;
};

TEST_F(ReproEnvironment, NothingSetMeansNoPrefix) {
  EXPECT_EQ(repro_environment(), "");
  EXPECT_EQ(repro_prefix("cpu"),
            polychip_command() + " certify --suite precision --adapters cpu --case ");
}

// Each variable set and not empty, in a fixed order, as one shell word:
// plain when every character is safe, else single-quoted.
TEST_F(ReproEnvironment, SetVariablesComeFirstQuotedWhereTheShellNeedsIt) {
  ::setenv("POLYCHIP_PATCHES", "/opt/it's here.so", 1);
  ::setenv("POLYCHIP_ADAPTERS", "cpu,sim.faithful", 1);
  ::setenv("POLYCHIP_ADAPTER_PATH", "/a/b._-:+,=@%1", 1);
  ::setenv("POLYCHIP_HOST_FALLBACK", "", 1);
  EXPECT_EQ(repro_environment(),
            "POLYCHIP_ADAPTER_PATH=/a/b._-:+,=@%1 POLYCHIP_ADAPTERS=cpu,sim.faithful "
            "POLYCHIP_PATCHES='/opt/it'\\''s here.so' ");
}

TEST_F(ReproEnvironment, AnAdapterNameTheShellWouldSplitIsQuoted) {
  EXPECT_EQ(repro_prefix("my adapter"),
            polychip_command() + " certify --suite precision --adapters 'my adapter' --case ");
  EXPECT_EQ(repro_prefix(""),
            polychip_command() + " certify --suite precision --adapters '' --case ");
}

// A reproducer names the executable by its path, which runs as printed
// from any folder and whatever PATH holds (not "polychip", which is found
// only where it is installed on PATH).
TEST_F(ReproEnvironment, TheCommandIsThePathOfTheRunningExecutable) {
  EXPECT_EQ(polychip_command(), self_executable());
  EXPECT_EQ(polychip_command().front(), '/');
}

}  // namespace
}  // namespace polychip::conformance
