#include "polychip/comm/local_launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

// Sleeps until a rank may have exited or `timeout_ms` passes (-1: no
// limit): a poll on the ranks' pidfds, so the launcher costs nothing while
// the job runs; where pidfds are missing (Linux < 5.3), a 5 ms nap.
void wait_for_an_exit(const std::vector<Fd>& pidfds, const std::vector<bool>& done,
                      int timeout_ms) {
  std::vector<pollfd> watched;
  for (size_t i = 0; i < pidfds.size(); ++i) {
    if (!done[i] && pidfds[i].valid()) watched.push_back({pidfds[i].get(), POLLIN, 0});
  }
  if (watched.size() < pidfds.size()) timeout_ms = timeout_ms < 0 ? 5 : std::min(timeout_ms, 5);
  ::poll(watched.data(), watched.size(), timeout_ms);  // EINTR: the caller looks again
}

// Waits for every rank. The first rank to fail decides the job's exit code;
// ranks still running `grace_seconds` later are waiting on it (in the store,
// the mesh connect or a collective) and are killed, with one line naming the
// failed rank, as mpirun and torchrun do.
int supervise_ranks(const std::vector<pid_t>& pids, double grace_seconds) {
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
  while (alive > 0) {
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
      if (exit_code_of(status) == 0 || ended_others) continue;
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
    if (first_failed && !ended_others) {
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
    wait_for_an_exit(pidfds, done, timeout_ms);
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

int launch_local(const LocalLaunch& launch) {
  if (launch.np < 1) {
    throw_error(StatusCode::kInvalidArgument,
                "--np must be >= 1, got " + std::to_string(launch.np));
  }
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
  std::vector<pid_t> pids;
  for (int r = 0; r < launch.np; ++r) {
    std::vector<char*> envp;
    for (std::string& e : environments[r]) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) throw_error(StatusCode::kInternal, "fork failed");
    if (pid == 0) {
      // Only rank 0 keeps the store's socket across exec (fcntl is
      // async-signal-safe, as a forked child of a threaded parent needs).
      if (r == 0) ::fcntl(store_socket.get(), F_SETFD, 0);
      ::execve(launch.program.c_str(), args.data(), envp.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  // Rank 0 holds the socket now; a copy here would queue connections that
  // nobody accepts once rank 0 dies, where a refused connect is clearer.
  store_socket.reset();
  return supervise_ranks(pids, launch.grace_seconds);
}

}  // namespace polychip::comm
