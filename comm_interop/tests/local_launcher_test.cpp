// The built-in local launcher (`--np`) never waits on a dead rank: when one
// rank fails or dies, the job ends within seconds with a line naming it,
// while the survivors would otherwise wait out the 60 s setup timeout.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

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

TEST(LocalLauncher, EveryRankSucceedingIsZeroAndSilent) {
  Ended e = launch_worker({"sweep", "--quick"}, 2);
  EXPECT_EQ(e.code, 0) << e.stderr_text;
  EXPECT_EQ(e.stderr_text.find("polychip launcher"), std::string::npos) << e.stderr_text;
}

}  // namespace
