// run_adapter against stand-in workers: shell scripts that speak the worker
// protocol (worker.hpp) on fd 3 and then run every case, crash, hang, die
// between cases or before their hello, report a fatal error, or signal the
// supervisor while it waits for them. What the supervisor makes of each:
// the records, their verdicts and messages, how many workers it started and
// where each resumed.
#include "supervisor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "worker.hpp"

namespace polychip::conformance {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* const kCaseIds[] = {"exp/f32/1/seed=1", "exp/f32/2/seed=1", "exp/f32/3/seed=1"};

// The stand-in's helpers, run in the test's folder. It is started as
// `certify-worker --adapter A --level L --first N --result-fd 3 ...`; $first
// is N. Every start appends its arguments to the file `starts`.
constexpr const char* kPrelude = R"(
echo "$@" >> starts
first=$7
say() { echo "$1" >&3; }
hello_json='{"event":"hello","adapter":{"name":"stand-in"},"cases":3}'
hello() { say "$hello_json"; }
begin() { say "{\"event\":\"begin\",\"index\":$1}"; }
finish() { say "{\"event\":\"case\",\"index\":$1,\"record\":{\"verdict\":\"Pass\",\"case\":$1}}"; }
# Cases $first to $1 - 1, each begun and finished.
run_to() { i=$first; while [ $i -lt $1 ]; do begin $i; finish $i; i=$((i + 1)); done; }
done_() { say '{"event":"done"}'; }
)";

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("polychip_supervisor_test_{}_{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char* id : kCaseIds) cases_.push_back(precision::parse_case_id(id));
    options_.timeout_seconds = 60;  // long enough for a loaded machine; hang tests set less
    options_.worker_executable = (dir_ / "worker").string();
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Runs the three cases on adapter "fake" with a stand-in worker whose
  // shell body is `body` (after kPrelude).
  AdapterRun run(const std::string& body) {
    const fs::path script = options_.worker_executable;
    std::ofstream(script) << "#!/bin/sh\ncd '" << dir_.string() << "' || exit 9" << kPrelude << body
                          << "\n";
    fs::permissions(script, fs::perms::owner_all);
    const auto start = std::chrono::steady_clock::now();
    AdapterRun r = run_adapter(
        "fake", cases_, options_,
        [this](const std::string& adapter, size_t index, size_t total, const json& record) {
          EXPECT_EQ(adapter, "fake");
          EXPECT_EQ(total, 3u);
          progress_.push_back({index, record});
        });
    elapsed_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.name, "fake");
    EXPECT_EQ(r.records.size(), 3u);
    return r;
  }
  // The arguments of each worker start, one line each.
  std::vector<std::string> starts() const {
    std::ifstream in(dir_ / "starts");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  // The record the supervisor wrote itself for case `index`.
  void expect_bare(const json& record, size_t index, const std::string& verdict,
                   const std::string& message) {
    EXPECT_EQ(record["id"], kCaseIds[index]);
    EXPECT_EQ(record["verdict"], verdict);
    EXPECT_EQ(record["message"], message);
    EXPECT_EQ(record["repro"], repro_prefix("fake") + kCaseIds[index]);
  }
  // A stand-in whose first worker runs case 0, then ends itself by `how`
  // in case 1; the next one runs the rest.
  static std::string ending_in_case_1(const std::string& how) {
    return fmt::format("hello; run_to 1; if [ $first = 0 ]; then begin 1; {}; fi; run_to 3; done_",
                       how);
  }
  static std::string start_line(int first) {
    return fmt::format("certify-worker --adapter fake --level quick --first {} --result-fd 3",
                       first);
  }

  fs::path dir_;
  std::vector<precision::CaseSpec> cases_;
  CertifyOptions options_;
  std::vector<std::pair<size_t, json>> progress_;
  double elapsed_ms_ = 0;
};

const json kPass0 = {{"verdict", "Pass"}, {"case", 0}};
const json kPass1 = {{"verdict", "Pass"}, {"case", 1}};
const json kPass2 = {{"verdict", "Pass"}, {"case", 2}};

TEST_F(SupervisorTest, AWorkerThatRunsEveryCaseGivesItsRecordsInOrder) {
  options_.case_id = "exp/f32/1/seed=1";
  options_.tolerances_path = "t.json";
  options_.waivers_path = "w.json";
  const AdapterRun r = run("hello; run_to 3; done_");
  EXPECT_EQ(r.records, (std::vector<json>{kPass0, kPass1, kPass2}));
  EXPECT_EQ(r.info, json({{"name", "stand-in"}}));
  EXPECT_FALSE(r.fatal);
  EXPECT_EQ(r.worker_starts, 1);
  EXPECT_EQ(starts(),
            std::vector<std::string>{start_line(0) + " --case exp/f32/1/seed=1 --tolerances t.json "
                                                     "--waivers w.json"});
  ASSERT_EQ(progress_.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(progress_[i], std::make_pair(i, r.records[i]));
}

// A worker that dies inside a case: that case gets the verdict Crash with
// how the worker ended, and a fresh worker resumes with the next case.
struct Death {
  const char* how;      // shell command that ends the worker
  const char* message;  // the crashed case's message
};
const Death kDeaths[] = {
    {"kill -SEGV $$", "worker killed by signal 11 (SIGSEGV: Segmentation fault)"},
    {"kill -ABRT $$", "worker killed by signal 6 (SIGABRT: Aborted)"},
    {"exit 5", "worker exited with code 5"},
};

TEST_F(SupervisorTest, ACaseThatEndsTheWorkerIsACrashAndTheNextCaseRunsInAFreshWorker) {
  for (const Death& d : kDeaths) {
    SCOPED_TRACE(d.how);
    fs::remove(dir_ / "starts");
    const AdapterRun r = run(ending_in_case_1(d.how));
    EXPECT_EQ(r.records[0], kPass0);
    expect_bare(r.records[1], 1, "Crash", d.message);
    // Its time until the crash: no more than the whole run took.
    EXPECT_GE(r.records[1].value("duration_ms", -1.0), 0.0);
    EXPECT_LE(r.records[1].value("duration_ms", -1.0), elapsed_ms_);
    EXPECT_EQ(r.records[2], kPass2);
    EXPECT_FALSE(r.fatal);
    EXPECT_EQ(r.worker_starts, 2);
    EXPECT_EQ(starts(), (std::vector<std::string>{start_line(0), start_line(2)}));
  }
}

TEST_F(SupervisorTest, ACaseThatHangsIsATimeoutAndTheNextCaseRunsInAFreshWorker) {
  options_.timeout_seconds = 3;  // each line comes at once; only the hang waits this long
  const AdapterRun r =
      run("hello; run_to 1; if [ $first = 0 ]; then begin 1; sleep 600; fi; run_to 3; done_");
  EXPECT_EQ(r.records[0], kPass0);
  expect_bare(r.records[1], 1, "Timeout", "no result within 3 s; worker killed");
  EXPECT_GE(r.records[1].value("duration_ms", 0.0), 3000 - 100);  // until the kill
  EXPECT_EQ(r.records[2], kPass2);
  EXPECT_EQ(r.worker_starts, 2);
  EXPECT_EQ(starts(), (std::vector<std::string>{start_line(0), start_line(2)}));
}

// Dying between two cases loses nothing: the next worker starts at the case
// after the last one reported.
TEST_F(SupervisorTest, AWorkerThatDiesBetweenCasesIsFollowedByOneStartingAtTheNextCase) {
  const AdapterRun r = run("hello; if [ $first = 0 ]; then run_to 1; exit 0; fi; run_to 3; done_");
  EXPECT_EQ(r.records, (std::vector<json>{kPass0, kPass1, kPass2}));
  EXPECT_FALSE(r.fatal);
  EXPECT_EQ(r.worker_starts, 2);
  EXPECT_EQ(starts(), (std::vector<std::string>{start_line(0), start_line(1)}));
}

TEST_F(SupervisorTest, AWorkerThatFinishesNoCaseIsGivenUpAfterThreeStarts) {
  const AdapterRun r = run("hello; exit 0");
  const std::string fatal = "the worker for 'fake' made no progress in 3 starts";
  EXPECT_EQ(r.fatal, fatal);
  for (size_t i = 0; i < 3; ++i) expect_bare(r.records[i], i, "Fail", fatal);
  EXPECT_EQ(r.worker_starts, 3);
  EXPECT_EQ(starts(), (std::vector<std::string>(3, start_line(0))));
}

TEST_F(SupervisorTest, AWorkerThatDiesBeforeItsHelloFailsTheAdapterAtOnce) {
  const AdapterRun r = run("exit 1");
  const std::string fatal =
      "the worker for 'fake' failed before running a case: worker exited with code 1";
  EXPECT_EQ(r.fatal, fatal);
  for (size_t i = 0; i < 3; ++i) expect_bare(r.records[i], i, "Crash", fatal);
  EXPECT_EQ(r.worker_starts, 1);
  EXPECT_EQ(progress_.size(), 3u);
}

// Every case has its record, but the worker never said "done": the adapter
// fails, and the message says when the worker ended, not "before running a
// case".
TEST_F(SupervisorTest, AWorkerThatDiesAfterItsLastCaseFailsTheAdapterKeepingItsRecords) {
  const AdapterRun r = run("hello; run_to 3; kill -SEGV $$");
  EXPECT_EQ(r.records, (std::vector<json>{kPass0, kPass1, kPass2}));
  EXPECT_EQ(r.fatal,
            "the worker for 'fake' did not finish after its last case: worker killed by signal 11 "
            "(SIGSEGV: Segmentation fault)");
  EXPECT_EQ(r.worker_starts, 1);
}

// A fatal event (the worker could not start on the adapter) ends the run:
// the cases not run are NotSupported when the request was wrong, else Fail.
TEST_F(SupervisorTest, AFatalEventEndsTheRunWithTheWorkersMessage) {
  for (const bool usage : {true, false}) {
    SCOPED_TRACE(usage);
    const AdapterRun r = run(fmt::format(
        R"(hello; run_to 1; say '{{"event":"fatal","usage":{},"message":"no such device"}}')",
        usage));
    EXPECT_EQ(r.fatal, "no such device");
    EXPECT_EQ(r.usage_error, usage);
    EXPECT_EQ(r.records[0], kPass0);
    for (size_t i = 1; i < 3; ++i)
      expect_bare(r.records[i], i, usage ? "NotSupported" : "Fail", "no such device");
    EXPECT_EQ(r.worker_starts, 1);
  }
}

// --timeout 1e300 or inf: no case times out (not a deadline overflowed to
// the past, or signed overflow that aborts the sanitizer build).
TEST_F(SupervisorTest, ATimeoutTooLongToCountMeansNoTimeout) {
  for (const double seconds : {1e300, std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE(seconds);
    options_.timeout_seconds = seconds;
    const AdapterRun r = run("hello; run_to 3; done_");
    EXPECT_EQ(r.records, (std::vector<json>{kPass0, kPass1, kPass2}));
    EXPECT_FALSE(r.fatal) << *r.fatal;
  }
}

// Lines that are not protocol (a library printing to fd 3), empty ones
// included, are skipped, not the lines read with them; an index past the
// last case is ignored, not used to index the cases.
TEST_F(SupervisorTest, LinesThatAreNotProtocolAndIndicesPastTheLastCaseAreIgnored) {
  const AdapterRun r = run(  // (the first three lines in one write)
      R"(printf '\nnot json\n%s\n' "$hello_json" >&3; finish 3; run_to 3; done_)");
  EXPECT_EQ(r.info, json({{"name", "stand-in"}}));
  EXPECT_EQ(r.records, (std::vector<json>{kPass0, kPass1, kPass2}));
  EXPECT_EQ(progress_.size(), 3u);
  EXPECT_FALSE(r.fatal);
  // A crash after announcing case 3 crashed no case of the run.
  const AdapterRun crashed = run("hello; begin 3; exit 1");
  EXPECT_EQ(crashed.fatal, "the worker for 'fake' made no progress in 3 starts");
  EXPECT_EQ(crashed.worker_starts, 3);
}

// The result pipe's write end can itself be fd 3 (the supervisor started
// with stdin closed, fd 3 free): the worker must still inherit it as fd 3.
TEST_F(SupervisorTest, TheWorkerGetsItsResultPipeWhenItsWriteEndIsAlreadyFd3) {
  const int saved_stdin = ::fcntl(0, F_DUPFD_CLOEXEC, 100);  // (not on fd 3)
  ASSERT_GE(saved_stdin, 0);
  ::close(0);
  const AdapterRun r = run("hello; run_to 3; done_");
  EXPECT_EQ(::fcntl(0, F_GETFD), -1) << "the supervisor's end of the pipe is left open";
  ::dup2(saved_stdin, 0);
  ::close(saved_stdin);
  EXPECT_EQ(r.records, (std::vector<json>{kPass0, kPass1, kPass2}));
  EXPECT_FALSE(r.fatal) << *r.fatal;
}

// A supervisor started with SIGCHLD ignored (exec keeps that) has its
// workers reaped by the kernel, and waitpid learns nothing: how a worker
// ended must still be told, not "exited with code 0".
TEST_F(SupervisorTest, HowAWorkerEndedIsToldEvenWhenSigchldWasIgnored) {
  struct sigaction ignore = {};
  struct sigaction saved = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGCHLD, &ignore, &saved), 0);
  const AdapterRun r = run(ending_in_case_1("kill -SEGV $$"));
  struct sigaction after = {};
  ::sigaction(SIGCHLD, &saved, &after);
  expect_bare(r.records[1], 1, "Crash", kDeaths[0].message);
  EXPECT_EQ(after.sa_handler, SIG_IGN) << "the caller's SIGCHLD action is restored";
}

// SIGUSR1, while it lives, runs a handler without SA_RESTART: a stand-in
// that sends it (`usr1`, to $PPID: the test) interrupts whatever call the
// supervisor is blocked in, poll or waitpid, with EINTR.
class Usr1Interrupts {
 public:
  Usr1Interrupts() {
    struct sigaction count = {};
    count.sa_handler = [](int) { ++received; };
    received = 0;
    ::sigaction(SIGUSR1, &count, &saved_);
  }
  ~Usr1Interrupts() { ::sigaction(SIGUSR1, &saved_, nullptr); }
  Usr1Interrupts(const Usr1Interrupts&) = delete;
  Usr1Interrupts& operator=(const Usr1Interrupts&) = delete;

  static inline std::atomic<int> received = 0;  // (lock-free: safe in a handler)

 private:
  struct sigaction saved_ = {};
};

// Each signal comes while the supervisor waits for the worker's next line,
// which then brings a result, stalls past the timeout, or is the end of the
// worker: the signal changes none of their verdicts (and leaves errno at
// EINTR, which the waits that follow must not take for their own).
TEST_F(SupervisorTest, ASignalWhileWaitingForALineChangesNoVerdict) {
  const Usr1Interrupts interrupts;
  options_.timeout_seconds = 2;
  const AdapterRun r =
      run("usr1() { sleep 0.5; kill -USR1 $PPID; sleep 0.5; }\n"
          "hello; if [ $first = 0 ]; then begin 0; usr1; finish 0; begin 1; usr1; sleep 4; fi\n"
          "begin 2; usr1; exit 3");
  EXPECT_EQ(r.records[0], kPass0);
  expect_bare(r.records[1], 1, "Timeout", "no result within 2 s; worker killed");
  expect_bare(r.records[2], 2, "Crash", "worker exited with code 3");
  EXPECT_EQ(r.worker_starts, 2);
  EXPECT_EQ(Usr1Interrupts::received.load(), 3);
}

// The worker closes its end of the pipe and ends later: the supervisor
// waits for it in waitpid, which the signal interrupts.
TEST_F(SupervisorTest, ASignalWhileWaitingForAWorkerToEndKeepsHowItEnded) {
  const Usr1Interrupts interrupts;
  const AdapterRun r =
      run(ending_in_case_1("exec 3>&-; sleep 0.5; kill -USR1 $PPID; sleep 0.5; kill -SEGV $$"));
  EXPECT_EQ(r.records[0], kPass0);
  expect_bare(r.records[1], 1, "Crash", kDeaths[0].message);
  EXPECT_EQ(r.records[2], kPass2);
  EXPECT_EQ(Usr1Interrupts::received.load(), 1);
}

}  // namespace
}  // namespace polychip::conformance
