// The `polychip` binary run end to end from a test: each test gets a fresh
// scratch folder (kept when the test fails, for a look), and run() returns
// the exit code with stdout and stderr captured there.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace polychip::training::testing {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("polychip_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  struct Result {
    int exit_code;
    std::string out, err;
  };
  // `polychip <args>`, without the caller's patch libraries and plugins;
  // `environment`: "NAME='value' ..." set for it.
  Result run(const std::string& args, const std::string& environment = "") {
    const std::string cmd =
        "env -u POLYCHIP_PATCHES -u POLYCHIP_ADAPTERS POCL_CACHE_DIR='" + (dir_ / "pocl").string() +
        "' " + environment + " '" + std::string(POLYCHIP_CLI) + "' " + args + " > '" +
        (dir_ / "stdout").string() + "' 2> '" + (dir_ / "stderr").string() + "'";
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir_ / "stdout"),
            slurp(dir_ / "stderr")};
  }
  std::filesystem::path dir_;
};

}  // namespace polychip::training::testing
