#include "supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "case_runner.hpp"
#include "polychip/error.hpp"
#include "worker.hpp"

namespace polychip::conformance {
namespace {

using Clock = std::chrono::steady_clock;

// The worker process run_adapter waits for (0: none), for stop_running_worker.
std::atomic<pid_t> running_worker{0};
static_assert(std::atomic<pid_t>::is_always_lock_free);

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return fmt::format("worker killed by signal {} (SIG{}: {})", sig, name ? name : "?",
                       strsignal(sig));
  }
  if (WIFEXITED(status)) return fmt::format("worker exited with code {}", WEXITSTATUS(status));
  return "worker ended";
}

// While it lives, SIGCHLD has its default action if the process was started
// with it ignored (exec keeps SIG_IGN): the kernel would reap each worker
// itself, and waitpid could not tell how one ended.
class ChildrenWaitable {
 public:
  ChildrenWaitable() {
    struct sigaction by_default = {};
    by_default.sa_handler = SIG_DFL;
    changed_ = ::sigaction(SIGCHLD, nullptr, &saved_) == 0 &&
               (saved_.sa_handler == SIG_IGN || (saved_.sa_flags & SA_NOCLDWAIT)) &&
               ::sigaction(SIGCHLD, &by_default, nullptr) == 0;
  }
  ~ChildrenWaitable() {
    if (changed_) ::sigaction(SIGCHLD, &saved_, nullptr);
  }
  ChildrenWaitable(const ChildrenWaitable&) = delete;
  ChildrenWaitable& operator=(const ChildrenWaitable&) = delete;

 private:
  struct sigaction saved_ = {};
  bool changed_ = false;
};

class Worker {
 public:
  Worker(const std::string& exe, const std::string& adapter, const CertifyOptions& o,
         size_t first) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw_error(StatusCode::kInternal, fmt::format("pipe2: {}", std::strerror(errno)));
    std::vector<std::string> args = {
        exe,     "certify-worker", "--adapter",           adapter,       "--level",
        o.level, "--first",        std::to_string(first), "--result-fd", "3"};
    if (o.case_id) args.insert(args.end(), {"--case", *o.case_id});
    if (!o.ops.empty())
      args.insert(args.end(), {"--ops", fmt::format("{}", fmt::join(o.ops, ","))});
    if (!o.tolerances_path.empty()) args.insert(args.end(), {"--tolerances", o.tolerances_path});
    if (!o.waivers_path.empty()) args.insert(args.end(), {"--waivers", o.waivers_path});
    if (!o.record_trace_path.empty()) args.push_back("--keep-device-outputs");
    if (!o.nvidia_trace_path.empty())
      args.insert(args.end(), {"--nvidia-trace", o.nvidia_trace_path});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) throw_error(StatusCode::kInternal, fmt::format("fork: {}", std::strerror(errno)));
    if (pid_ == 0) {
      // Child: results on fd 3, its stdout joins our stderr (keeps our
      // stdout for the summary), own process group so a kill reaches all.
      ::setpgid(0, 0);
      if (fds[1] == 3) {
        ::fcntl(3, F_SETFD, 0);
      } else if (::dup2(fds[1], 3) < 0) {
        _exit(126);
      }
      ::dup2(2, 1);
      ::execv(exe.c_str(), argv.data());
      _exit(127);
    }
    running_worker = pid_;
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~Worker() {
    kill();
    if (fd_ >= 0) ::close(fd_);
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Next complete line; nullopt on EOF. Sets timed_out when `deadline` passes.
  std::optional<std::string> read_line(Clock::time_point deadline, bool& timed_out) {
    timed_out = false;
    while (true) {
      // From where the last search stopped: a case's device outputs can make
      // a line of megabytes, read 64 KiB at a time.
      size_t nl = buffer_.find('\n', searched_);
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        searched_ = 0;
        return line;
      }
      searched_ = buffer_.size();
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        return std::nullopt;
      }
      pollfd p{fd_, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), INT_MAX)));
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) continue;  // re-check the deadline
      char chunk[65536];
      ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;  // EOF: the worker is gone
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  // Waits for the process; returns its status description.
  std::string reap() {
    if (pid_ <= 0) return status_;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    running_worker = 0;
    pid_ = -1;
    status_ = describe_status(status);
    return status_;
  }
  void kill() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      reap();
    }
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  size_t searched_ = 0;  // buffer_ before this holds no newline
  std::string buffer_;
  std::string status_;
};

}  // namespace

std::string self_executable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw_error(StatusCode::kInternal, "cannot read /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

void stop_running_worker() {
  if (const pid_t pid = running_worker; pid > 0) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }
}

RunningWorkerRegistration::RunningWorkerRegistration(pid_t pid) { running_worker = pid; }
RunningWorkerRegistration::~RunningWorkerRegistration() { running_worker = 0; }

AdapterRun run_adapter(const std::string& adapter, const std::vector<precision::CaseSpec>& cases,
                       const CertifyOptions& o, const ProgressFn& progress) {
  const ChildrenWaitable waitable;
  AdapterRun run;
  run.name = adapter;
  run.info = {{"name", adapter}};
  const std::string exe = o.worker_executable.empty() ? self_executable() : o.worker_executable;
  // A longer --timeout (1e300, inf) means none: the deadline must stay a
  // count of nanoseconds that now() can be added to.
  constexpr double kLongestTimeoutSeconds = 1e9;  // 31 years
  const auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::min(o.timeout_seconds, kLongestTimeoutSeconds)));
  const std::string prefix = repro_prefix(adapter);
  auto record_case = [&](size_t index, nlohmann::json record) {
    run.records[index] = std::move(record);
    if (progress) progress(adapter, index, cases.size(), run.records[index]);
  };
  run.records.assign(cases.size(), nullptr);
  run.device_outputs.assign(cases.size(), nullptr);

  size_t next = 0;
  int stalls = 0;  // worker starts in a row that finished no case
  while (next < cases.size()) {
    if (stalls >= 3) {
      run.fatal = fmt::format("the worker for '{}' made no progress in 3 starts", adapter);
      break;
    }
    const size_t started_at = next;
    Worker worker(exe, adapter, o, next);
    ++run.worker_starts;
    bool said_hello = false;
    // The case the worker announced and has not finished (kNoCase: none).
    constexpr size_t kNoCase = SIZE_MAX;
    size_t current = kNoCase;
    Clock::time_point current_started{};
    Clock::time_point deadline = Clock::now() + timeout;
    bool finished = false;
    while (true) {
      bool timed_out = false;
      auto line = worker.read_line(deadline, timed_out);
      if (!line) {
        std::string what;
        precision::Verdict verdict;
        if (timed_out) {
          worker.kill();
          verdict = precision::Verdict::kTimeout;
          what = fmt::format("no result within {} s; worker killed", o.timeout_seconds);
        } else {
          what = worker.reap();
          verdict = precision::Verdict::kCrash;
        }
        if (current != kNoCase) {
          nlohmann::json record = precision::make_bare_record(
              cases[current], adapter, verdict, what, prefix + precision::case_id(cases[current]));
          // Until the crash or the kill: what JUnit shows as the case's time.
          record["duration_ms"] =
              std::chrono::duration<double, std::milli>(Clock::now() - current_started).count();
          record_case(current, std::move(record));
          next = current + 1;
        } else if (next >= cases.size()) {
          // Every case has its record, but the worker never said "done".
          run.fatal = fmt::format("the worker for '{}' did not finish after its last case: {}",
                                  adapter, what);
        } else if (!said_hello) {
          // Died or hung before reaching any case: no point restarting.
          run.fatal =
              fmt::format("the worker for '{}' failed before running a case: {}", adapter, what);
          for (size_t i = next; i < cases.size(); ++i)
            record_case(i, precision::make_bare_record(cases[i], adapter, verdict, *run.fatal,
                                                       prefix + precision::case_id(cases[i])));
          next = cases.size();
        }
        break;
      }
      nlohmann::json ev;
      try {
        ev = nlohmann::json::parse(*line);
      } catch (const nlohmann::json::exception&) {
        continue;  // not a protocol line
      }
      const std::string event = ev.value("event", "");
      if (event == "hello") {
        said_hello = true;
        run.info = ev["adapter"];
        deadline = Clock::now() + timeout;
      } else if (event == "begin") {
        const size_t index = ev["index"].get<size_t>();
        current = index < cases.size() ? index : kNoCase;
        current_started = Clock::now();
        deadline = current_started + timeout;
      } else if (event == "case") {
        size_t index = ev["index"].get<size_t>();
        if (index < cases.size()) {
          if (ev.contains("device_outputs")) run.device_outputs[index] = ev["device_outputs"];
          record_case(index, ev["record"]);
        }
        current = kNoCase;
        next = index + 1;
        deadline = Clock::now() + timeout;
      } else if (event == "fatal") {
        run.fatal = ev.value("message", "unknown error");
        run.usage_error = ev.value("usage", false);
        worker.reap();
        finished = true;
        break;
      } else if (event == "done") {
        worker.reap();
        finished = true;
        next = cases.size();
        break;
      }
    }
    if (finished && run.fatal) break;
    stalls = next > started_at ? 0 : stalls + 1;
  }
  // Anything never reported (a fatal error stopped the run).
  for (size_t i = 0; i < cases.size(); ++i)
    if (run.records[i].is_null())
      run.records[i] = precision::make_bare_record(
          cases[i], adapter,
          run.usage_error ? precision::Verdict::kNotSupported : precision::Verdict::kFail,
          run.fatal ? *run.fatal : "not run", prefix + precision::case_id(cases[i]));
  return run;
}

}  // namespace polychip::conformance
