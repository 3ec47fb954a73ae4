// Results files are replaced whole: a reader, or a run killed at any moment,
// sees the old file or the new one, never half of one.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "polychip/atomic_file.hpp"
#include "polychip/error.hpp"

namespace polychip {
namespace {

namespace fs = std::filesystem;

std::string contents_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(AtomicFile, WritesReplacesAndLeavesNoTemporaries) {
  fs::path dir = fs::temp_directory_path() / ("polychip_atomic_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "results.json").string();
  write_file_atomically(path, "first");
  EXPECT_EQ(contents_of(path), "first");
  write_file_atomically(path, "second, longer");
  EXPECT_EQ(contents_of(path), "second, longer");
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "results.json");
  }
  EXPECT_EQ(files, 1u);
  fs::remove_all(dir);
  try {
    write_file_atomically("/nonexistent_dir_polychip/x.json", "x");
    FAIL() << "writing into a missing folder succeeded";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("/nonexistent_dir_polychip/x.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace polychip
