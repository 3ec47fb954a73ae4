// Data files read whole: their bytes, or an error naming the path and what
// is wrong with it (a folder given as a file was an internal error).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "polychip/error.hpp"
#include "polychip/whole_file.hpp"

namespace polychip {
namespace {

namespace fs = std::filesystem;

// "CODE: message" of what read_whole_file threw, or "read".
std::string outcome(const std::string& path) {
  try {
    read_whole_file(path, "a test file");
  } catch (const Error& e) {
    return status_code_name(static_cast<int32_t>(e.code())) + ": " + e.message();
  }
  return "read";
}

TEST(WholeFile, ReadsEveryByteAndNamesWhatCannotBeRead) {
  const fs::path dir =
      fs::temp_directory_path() / ("polychip_whole_file_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "data.bin").string();
  std::string bytes(200000, '\0');  // several read() chunks, NUL bytes kept
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_EQ(read_whole_file(path, "a test file"), bytes);
  std::ofstream(path, std::ios::trunc).close();
  EXPECT_EQ(read_whole_file(path, "a test file"), "");
  EXPECT_EQ(outcome(dir.string()),
            "INVALID_ARGUMENT: a test file: " + dir.string() + " is a folder, not a file");
  EXPECT_EQ(outcome((dir / "none").string()), "NOT_FOUND: a test file: cannot open " +
                                                  (dir / "none").string() +
                                                  ": No such file or directory");
  EXPECT_EQ(outcome("/proc/self/mem"),
            "UNAVAILABLE: a test file: cannot read /proc/self/mem: Input/output error");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace polychip
