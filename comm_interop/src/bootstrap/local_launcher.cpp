#include "polychip/comm/local_launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

#include "polychip/error.hpp"
#include "transport/rdma/shm_provider_regions.hpp"
#include "transport/tcp/socket.hpp"
#include "wire/wire.hpp"

namespace polychip::comm {

namespace {

// "exited with code 3" / "was killed by signal 9 (Killed)".
std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
  }
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

int exit_code_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A termination signal sent to the launcher alone (`kill`, `timeout`, a
// batch system; a terminal's Ctrl-C reaches the ranks too) is passed on to
// every rank, as mpirun and torchrun do: left to its default, the launcher
// died and its ranks ran on, orphaned. The handler only notes the signal and
// wakes the supervising poll through a pipe.
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<int> pending_signal{0};
int signal_wake_fd = -1;

void note_signal(int sig) {
  pending_signal.store(sig);
  const char byte = 1;
  (void)!::write(signal_wake_fd, &byte, 1);
}

// Installs note_signal for kForwardedSignals while it lives, except those
// this process ignores (nohup's SIGHUP, a background job's SIGINT: the ranks
// ignore them too); restores the dispositions it found.
class SignalForwarding {
 public:
  SignalForwarding() {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw_error(StatusCode::kInternal, "pipe2");
    signal_wake_fd = wake_[1];
    pending_signal.store(0);
    struct sigaction action {};
    action.sa_handler = note_signal;
    ::sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i) {
      ::sigaction(kForwardedSignals[i], nullptr, &previous_[i]);
      if (previous_[i].sa_handler != SIG_IGN) ::sigaction(kForwardedSignals[i], &action, nullptr);
    }
  }
  ~SignalForwarding() {
    for (size_t i = 0; i < std::size(kForwardedSignals); ++i)
      ::sigaction(kForwardedSignals[i], &previous_[i], nullptr);
    signal_wake_fd = -1;
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;
  int wake_fd() const { return wake_[0]; }
  // The signal received since the last call, or 0.
  int take() {
    char drained[64];
    while (::read(wake_[0], drained, sizeof drained) > 0) {
    }
    return pending_signal.exchange(0);
  }

 private:
  int wake_[2] = {-1, -1};
  struct sigaction previous_[std::size(kForwardedSignals)]{};
};

// Sleeps until a rank may have exited, a signal came or `timeout_ms` passes
// (-1: no limit): a poll on the ranks' pidfds, so the launcher costs nothing
// while the job runs; where pidfds are missing (Linux < 5.3), a 5 ms nap.
void wait_for_an_exit(const std::vector<Fd>& pidfds, const std::vector<bool>& done, int signal_fd,
                      int timeout_ms) {
  std::vector<pollfd> watched = {{signal_fd, POLLIN, 0}};
  for (size_t i = 0; i < pidfds.size(); ++i) {
    if (!done[i] && pidfds[i].valid()) watched.push_back({pidfds[i].get(), POLLIN, 0});
  }
  if (watched.size() < pidfds.size() + 1) timeout_ms = timeout_ms < 0 ? 5 : std::min(timeout_ms, 5);
  ::poll(watched.data(), watched.size(), timeout_ms);  // EINTR: the caller looks again
}

// Kills and reaps the ranks started before a failure to start the next.
void end_ranks(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) ::kill(pid, SIGKILL);
  for (pid_t pid : pids) ::waitpid(pid, nullptr, 0);
}

// Waits for every rank. The first rank to fail decides the job's exit code;
// ranks still running `grace_seconds` later are waiting on it (in the store,
// the mesh connect or a collective) and are killed, with one line naming the
// failed rank, as mpirun and torchrun do. A signal the launcher receives is
// passed to every rank (a second one, or `grace_seconds` without their end,
// kills them) and returned as `received_signal`.
int supervise_ranks(const std::vector<pid_t>& pids, double grace_seconds, SignalForwarding& signals,
                    int& received_signal) {
  size_t alive = pids.size();
  std::vector<bool> done(pids.size(), false);
  std::vector<Fd> pidfds;
  // The raw syscall: glibc 2.36's <sys/pidfd.h> lacks C linkage for C++.
  for (pid_t pid : pids) pidfds.emplace_back(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  std::optional<size_t> first_failed;  // the cause: named once the job ends
  int first_status = 0;
  bool ended_others = false;
  auto fail_time = std::chrono::steady_clock::now();
  auto report = [&](const std::string& tail) {
    std::fprintf(stderr, "polychip launcher: rank %zu %s%s\n", *first_failed,
                 describe_exit(first_status).c_str(), tail.c_str());
  };
  auto signal_time = std::chrono::steady_clock::now();
  auto kill_alive = [&](int sig) {
    for (size_t i = 0; i < pids.size(); ++i)
      if (!done[i]) ::kill(pids[i], sig);  // not reaped yet: the pid is still the rank's
  };
  while (alive > 0) {
    if (const int sig = signals.take(); sig != 0) {
      if (received_signal == 0) {
        received_signal = sig;
        signal_time = std::chrono::steady_clock::now();
        std::fprintf(stderr, "polychip launcher: %s received; passing it to the ranks\n",
                     ::sigabbrev_np(sig));
        kill_alive(sig);
      } else {
        kill_alive(SIGKILL);  // asked twice: no more waiting
      }
    }
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      siginfo_t exited{};
      if (::waitid(P_PID, pids[i], &exited, WEXITED | WNOHANG | WNOWAIT) != 0 ||
          exited.si_pid != pids[i]) {
        continue;
      }
      // Killed, a rank cleans up nothing: what it left in /dev/shm goes now,
      // while the zombie still holds its pid (the names carry it).
      if (exited.si_code == CLD_KILLED || exited.si_code == CLD_DUMPED) {
        remove_shm_provider_regions(pids[i]);
      }
      int status = 0;
      ::waitpid(pids[i], &status, 0);
      done[i] = true;
      --alive;
      if (exit_code_of(status) == 0 || ended_others || received_signal != 0) continue;
      // A death by signal is the cause and its peers' errors the consequence,
      // even when a peer that noticed it is reaped first (a killed process
      // closes its sockets before it becomes a zombie).
      if (!first_failed) fail_time = std::chrono::steady_clock::now();
      if (!first_failed || (WIFSIGNALED(status) && !WIFSIGNALED(first_status))) {
        first_failed = i;
        first_status = status;
      }
    }
    if (alive == 0) break;
    int timeout_ms = -1;
    if (received_signal != 0 && !ended_others) {
      const double left =
          grace_seconds -
          std::chrono::duration<double>(std::chrono::steady_clock::now() - signal_time).count();
      if (left <= 0) {
        ended_others = true;
        std::fprintf(stderr, "polychip launcher: ranks still running %g s after %s: killed\n",
                     grace_seconds, ::sigabbrev_np(received_signal));
        kill_alive(SIGKILL);
        continue;
      }
      timeout_ms = static_cast<int>(std::ceil(left * 1000));
    } else if (first_failed && !ended_others) {
      const double left =
          grace_seconds -
          std::chrono::duration<double>(std::chrono::steady_clock::now() - fail_time).count();
      if (left <= 0) {
        ended_others = true;
        std::string ended;
        for (size_t i = 0; i < pids.size(); ++i) {
          if (done[i]) continue;
          ::kill(pids[i], SIGKILL);
          ended += (ended.empty() ? "" : ", ") + std::to_string(i);
        }
        report("; ending the job (killed rank(s) " + ended + ")");
        continue;
      }
      timeout_ms = static_cast<int>(std::ceil(left * 1000));
    }
    wait_for_an_exit(pidfds, done, signals.wake_fd(), timeout_ms);
  }
  if (first_failed && !ended_others) report("; the other ranks ended on their own");
  return first_failed ? exit_code_of(first_status) : 0;
}

}  // namespace

std::vector<std::string> own_command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::string cur;
  for (char c : all) {
    if (c == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) args.push_back(cur);
  return args;
}

void check_local_rank_count(int np) {
  if (np >= 1 && np <= kMaxLocalRanks) return;
  throw_error(StatusCode::kInvalidArgument,
              "--np must be between 1 and " + std::to_string(kMaxLocalRanks) + ", got " +
                  std::to_string(np) +
                  (np > kMaxLocalRanks ? " (the built-in launcher runs every rank on this host; "
                                         "start larger jobs with mpirun, srun or torchrun)"
                                       : ""));
}

int launch_local(const LocalLaunch& launch) {
  check_local_rank_count(launch.np);
  if (launch.argv.empty()) throw_error(StatusCode::kInvalidArgument, "launch_local: empty argv");
  uint8_t secret[32];
  random_bytes(secret, sizeof(secret));
  std::string secret_hex = to_hex(secret);
  // The launcher binds the store's port and hands the socket to rank 0: a
  // port chosen here and released would be free for any process to take
  // (an outgoing connection picks from the same ephemeral range) until rank
  // 0 starts and binds it.
  auto [store_socket, store_port] = listen_tcp("127.0.0.1", 0);
  const std::string port = std::to_string(store_port);
  std::vector<char*> args;
  for (const std::string& a : launch.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Every rank's environment is built before fork: the child of a
  // multi-threaded parent (adapters start threads) may only exec.
  std::vector<std::vector<std::string>> environments;
  for (int r = 0; r < launch.np; ++r) {
    std::map<std::string, std::string> vars = {{"RANK", std::to_string(r)},
                                               {"WORLD_SIZE", std::to_string(launch.np)},
                                               {"LOCAL_RANK", std::to_string(r)},
                                               {"MASTER_ADDR", "127.0.0.1"},
                                               {"MASTER_PORT", port},
                                               {"POLYCHIP_COMM_SECRET", secret_hex},
                                               {"POLYCHIP_COMM_LOCAL_CHILD", "1"}};
    if (r == 0) vars["POLYCHIP_COMM_STORE_FD"] = std::to_string(store_socket.get());
    for (auto& [k, v] : launch.extra_env) vars[k] = v;
    if (r < static_cast<int>(launch.rank_env.size())) {
      for (auto& [k, v] : launch.rank_env[r]) {
        if (!v.empty()) vars[k] = v;
      }
    }
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      std::string entry = *e;
      if (!vars.count(entry.substr(0, entry.find('=')))) env.push_back(entry);
    }
    for (auto& [k, v] : vars) env.push_back(k + "=" + v);
    environments.push_back(std::move(env));
  }
  // From before the first fork: a signal between two forks is passed on too.
  std::optional<SignalForwarding> signals(std::in_place);
  const pid_t launcher = ::getpid();
  std::vector<pid_t> pids;
  // A signal while the ranks start: those started get it, no more start.
  for (int r = 0; r < launch.np && pending_signal.load() == 0; ++r) {
    std::vector<char*> envp;
    for (std::string& e : environments[r]) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) {
      const int err = errno;
      end_ranks(pids);
      throw_error(StatusCode::kUnavailable,
                  "cannot start rank " + std::to_string(r) + " of " + std::to_string(launch.np) +
                      ": fork: " + std::strerror(err) +
                      (err == EAGAIN ? " (a limit on processes: ulimit -u)" : ""));
    }
    if (pid == 0) {
      // A launcher killed outright (SIGKILL, which it cannot pass on) takes
      // its ranks with it; one already gone before this line is seen by
      // getppid. Only rank 0 keeps the store's socket across exec. (prctl,
      // getppid and fcntl are async-signal-safe, as a forked child of a
      // threaded parent needs.)
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != launcher) ::_exit(127);
      if (r == 0) ::fcntl(store_socket.get(), F_SETFD, 0);
      ::execve(launch.program.c_str(), args.data(), envp.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  // Rank 0 holds the socket now; a copy here would queue connections that
  // nobody accepts once rank 0 dies, where a refused connect is clearer.
  store_socket.reset();
  int received_signal = 0;
  const int code = supervise_ranks(pids, launch.grace_seconds, *signals, received_signal);
  if (received_signal == 0) received_signal = signals->take();  // before any rank started
  signals.reset();
  if (received_signal == 0) return code;
  // The ranks are gone: end as the signal would have ended this process
  // (its disposition restored), which is what a shell checks to stop a loop
  // on Ctrl-C; where a handler of the caller's took it, 128 + its number.
  std::fflush(nullptr);
  ::raise(received_signal);
  return 128 + received_signal;
}

}  // namespace polychip::comm
