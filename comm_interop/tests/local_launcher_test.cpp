// The built-in local launcher (`--np`) never waits on a dead rank: when one
// rank fails or dies, the job ends within seconds with a line naming it,
// while the survivors would otherwise wait out the 60 s setup timeout.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "polychip/comm/local_launcher.hpp"

using namespace polychip::comm;

namespace {

struct Ended {
  int code;
  double seconds;
  std::string stderr_text;
};

Ended launch_worker(std::vector<std::string> arguments, int np,
                    std::map<std::string, std::string> environment = {}) {
  LocalLaunch launch;
  launch.program = COMM_WORKER;
  launch.argv = {COMM_WORKER};
  launch.argv.insert(launch.argv.end(), arguments.begin(), arguments.end());
  launch.np = np;
  launch.extra_env = std::move(environment);
  launch.extra_env["POLYCHIP_COMM_TIMEOUT"] = "60";
  testing::internal::CaptureStderr();  // the ranks inherit it
  auto start = std::chrono::steady_clock::now();
  Ended e;
  e.code = launch_local(launch);
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  e.stderr_text = testing::internal::GetCapturedStderr();
  return e;
}

// Rank 1 cannot open its device; ranks 0 and 2 wait for it in the rendezvous.
TEST(LocalLauncher, ARankFailingBeforeTheCollectivesEndsTheJobAtOnce) {
  Ended e = launch_worker({"sweep", "--quick", "--devices", "cpu,nosuch,cpu"}, 3);
  EXPECT_EQ(e.code, 2) << e.stderr_text;  // the failed rank's own exit code
  EXPECT_LT(e.seconds, 5) << e.stderr_text;
  EXPECT_NE(e.stderr_text.find("polychip launcher: rank 1 exited with code 2; ending the job"),
            std::string::npos)
      << e.stderr_text;
}

// Rank 1 SIGKILLs itself mid all-reduce: the job's code says so.
TEST(LocalLauncher, ARankKilledBySignalIsNamedWithTheSignal) {
  Ended e = launch_worker({"kill"}, 2);
  EXPECT_EQ(e.code, 128 + 9) << e.stderr_text;
  EXPECT_LT(e.seconds, 5) << e.stderr_text;
  EXPECT_NE(e.stderr_text.find("polychip launcher: rank 1 was killed by signal 9"),
            std::string::npos)
      << e.stderr_text;
}

// A rank killed with an endpoint on libfabric's shm provider cleans up
// nothing; the launcher removes its 16 MiB region from /dev/shm (before,
// every killed rank's stayed until removed by hand).
TEST(LocalLauncher, AKilledRanksSharedMemoryRegionsAreRemoved) {
  Ended e = launch_worker({"kill"}, 2,
                          {{"POLYCHIP_COMM_TRANSPORT", "rdma"}, {"POLYCHIP_NET_PROVIDER", "shm"}});
  EXPECT_EQ(e.code, 128 + 9) << e.stderr_text;
  std::smatch killed;
  ASSERT_TRUE(
      std::regex_search(e.stderr_text, killed, std::regex(R"(rank 1 \(pid (\d+)\): SIGKILL)")))
      << e.stderr_text;
  const std::string prefix = killed[1].str() + ":" + std::to_string(::getuid()) + ":";
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    EXPECT_NE(entry.path().filename().string().rfind(prefix, 0), 0u)
        << entry.path() << " left by the killed rank\n"
        << e.stderr_text;
  }
}

// The store's port stays bound from the launch until rank 0 serves it:
// rank 0 inherits the launcher's listening socket (and only rank 0), so
// rank 1 reaches the port while rank 0 has not touched it yet.
TEST(LocalLauncher, RankZeroInheritsTheStoreSocketSoThePortIsNeverFree) {
  LocalLaunch launch;
  launch.program = "/bin/bash";
  launch.argv = {
      "bash", "-c",
      "if [ \"$RANK\" = 0 ]; then [ -S /proc/$$/fd/$POLYCHIP_COMM_STORE_FD ] && sleep 2; "
      "else [ -z \"$POLYCHIP_COMM_STORE_FD\" ] && "
      "exec 3<>/dev/tcp/127.0.0.1/$MASTER_PORT; fi"};
  launch.np = 2;
  testing::internal::CaptureStderr();
  int code = launch_local(launch);
  std::string text = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 0) << text;
}

// A launcher in a child of the test (it ends itself with the signal it
// passes on) whose three ranks write their pids to `dir`, then become
// `rank_command` (exec: the pid stays the rank's).
struct LauncherWithRanks {
  pid_t launcher = -1;
  std::vector<pid_t> ranks;
  std::string stderr_path;

  LauncherWithRanks(const std::string& dir, const std::string& rank_command) {
    stderr_path = dir + "/stderr";
    launcher = ::fork();
    if (launcher == 0) {
      std::freopen(stderr_path.c_str(), "w", stderr);
      LocalLaunch launch;
      launch.program = "/bin/bash";
      launch.argv = {"bash", "-c",
                     "echo $$ > " + dir + "/$RANK.pid.tmp && mv " + dir + "/$RANK.pid.tmp " + dir +
                         "/$RANK.pid && " + rank_command};
      launch.np = 3;
      std::_Exit(launch_local(launch));
    }
    for (int r = 0; r < 3; ++r) {
      const std::string path = dir + "/" + std::to_string(r) + ".pid";
      for (int tries = 0; tries < 1000 && !std::filesystem::exists(path); ++tries) ::usleep(10000);
      std::ifstream in(path);
      pid_t pid = 0;
      in >> pid;
      ranks.push_back(pid);
    }
  }
  // The launcher's wait status, within `seconds` (-1 when it did not end).
  int wait(double seconds) {
    for (int tries = 0; tries < seconds * 100; ++tries) {
      int status = 0;
      if (::waitpid(launcher, &status, WNOHANG) == launcher) return status;
      ::usleep(10000);
    }
    return -1;
  }
  std::string stderr_text() const {
    std::ifstream in(stderr_path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  ~LauncherWithRanks() {  // whatever a failing test left running
    for (pid_t pid : ranks)
      if (pid > 0) ::kill(pid, SIGKILL);
    ::kill(launcher, SIGKILL);
    ::waitpid(launcher, nullptr, 0);
  }
};

std::string scratch_dir() {
  char name[] = "/tmp/polychip_launcher_XXXXXX";
  return ::mkdtemp(name);
}

// Whether `pid` runs: a zombie (a rank whose launcher died, not yet reaped
// by whatever adopted it) does not.
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t after_name = text.rfind(')');
  return after_name != std::string::npos && after_name + 2 < text.size() &&
         text[after_name + 2] != 'Z';
}

// Sends `sig` to the launcher alone; within seconds it must have ended by
// `sig`, with no rank left running and `said` on its stderr.
void expect_job_ended_by(int sig, const std::string& rank_command, const std::string& said) {
  const std::string dir = scratch_dir();
  LauncherWithRanks job(dir, rank_command);
  ASSERT_EQ(job.ranks.size(), 3u);
  ::kill(job.launcher, sig);
  const int status = job.wait(10);
  if (sig != SIGKILL) {
    EXPECT_TRUE(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == sig)
        << "status " << status << "\n"
        << job.stderr_text();
  }
  for (pid_t rank : job.ranks) {
    bool gone = false;
    for (int tries = 0; tries < 500 && !gone; ++tries) {
      gone = !running(rank);
      if (!gone) ::usleep(10000);
    }
    EXPECT_TRUE(gone) << "rank pid " << rank << " outlived its launcher (" << sigabbrev_np(sig)
                      << ")";
  }
  EXPECT_NE(job.stderr_text().find(said), std::string::npos) << job.stderr_text();
  std::filesystem::remove_all(dir);
}

// `kill <launcher>`, `timeout`, a batch system: the signal reaches the
// launcher alone. It used to die at once and leave its ranks running,
// orphaned, to the end of their job; now each rank gets the signal, and the
// launcher ends with it once they are gone.
TEST(LocalLauncher, ASignalToTheLauncherIsPassedToEveryRank) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    expect_job_ended_by(sig, "exec sleep 60",
                        std::string("polychip launcher: ") + ::sigabbrev_np(sig) +
                            " received; passing it to the ranks");
  }
}

// Ranks that ignore the signal are killed after the grace; a launcher
// killed outright (SIGKILL, which it cannot pass on) takes its ranks along.
TEST(LocalLauncher, RanksThatOutliveTheSignalOrTheLauncherAreKilled) {
  expect_job_ended_by(SIGTERM, "trap '' TERM; exec sleep 60",
                      "ranks still running 1 s after TERM: killed");
  expect_job_ended_by(SIGKILL, "exec sleep 60", "");
}

TEST(LocalLauncher, EveryRankSucceedingIsZeroAndSilent) {
  Ended e = launch_worker({"sweep", "--quick"}, 2);
  EXPECT_EQ(e.code, 0) << e.stderr_text;
  EXPECT_EQ(e.stderr_text.find("polychip launcher"), std::string::npos) << e.stderr_text;
}

}  // namespace
