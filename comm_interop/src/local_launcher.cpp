#include "polychip/comm/local_launcher.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "polychip/error.hpp"
#include "socket.hpp"
#include "wire.hpp"

namespace polychip::comm {

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

int free_local_port() {
  auto [fd, port] = listen_tcp("127.0.0.1", 0);
  return port;
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
  std::string port = std::to_string(free_local_port());
  std::vector<pid_t> pids;
  for (int r = 0; r < launch.np; ++r) {
    pid_t pid = ::fork();
    if (pid < 0) throw_error(StatusCode::kInternal, "fork failed");
    if (pid == 0) {
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(launch.np).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", port.c_str(), 1);
      ::setenv("POLYCHIP_COMM_SECRET", secret_hex.c_str(), 1);
      ::setenv("POLYCHIP_COMM_LOCAL_CHILD", "1", 1);
      for (auto& [k, v] : launch.extra_env) ::setenv(k.c_str(), v.c_str(), 1);
      if (r < static_cast<int>(launch.rank_env.size())) {
        for (auto& [k, v] : launch.rank_env[r]) {
          if (!v.empty()) ::setenv(k.c_str(), v.c_str(), 1);
        }
      }
      std::vector<char*> args;
      for (const std::string& a : launch.argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(launch.program.c_str(), args.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  int worst = 0;
  size_t alive = pids.size();
  std::vector<bool> done(pids.size(), false);
  bool failing = false;
  auto fail_time = std::chrono::steady_clock::now();
  while (alive > 0) {
    bool progressed = false;
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      pid_t w = ::waitpid(pids[i], &status, WNOHANG);
      if (w == pids[i]) {
        done[i] = true;
        --alive;
        progressed = true;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0 && !failing) {
          failing = true;
          fail_time = std::chrono::steady_clock::now();
        }
        worst = std::max(worst, code);
      }
    }
    if (failing && std::chrono::steady_clock::now() - fail_time >
                       std::chrono::duration<double>(launch.grace_seconds)) {
      for (size_t i = 0; i < pids.size(); ++i) {
        if (!done[i]) ::kill(pids[i], SIGKILL);
      }
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return worst;
}

}  // namespace polychip::comm
