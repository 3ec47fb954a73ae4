#include "polychip/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip {
namespace {

[[noreturn]] void fail(const std::string& path, const char* call) {
  throw_error(StatusCode::kUnavailable,
              fmt::format("cannot write '{}': {}: {}", path, call, std::strerror(errno)));
}

// The folder `path` is in ("." for a bare name).
std::filesystem::path folder_of(const std::filesystem::path& path) {
  return path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
}

}  // namespace

void check_file_destination(const std::string& option, const std::string& path,
                            const std::string& file_role) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(path).parent_path();
  if (!fs::is_directory(folder.empty() ? "." : folder))
    throw_error(StatusCode::kInvalidArgument,
                option + " '" + path + "': no folder '" + folder.string() + "'");
  if (fs::is_directory(path))
    throw_error(StatusCode::kInvalidArgument,
                option + " '" + path + "' is a folder: name " + file_role);
}

std::string write_temporary_beside(const std::string& path, std::string_view contents) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::string tmpl =
      (folder_of(target) / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) fail(path, "mkstemp");
  const std::string tmp(name.data());
  auto cleanup = [&](const char* call) {
    int saved = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    errno = saved;
    fail(path, call);
  };
  const char* p = contents.data();
  size_t left = contents.size();
  while (left) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) cleanup("write");
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) cleanup("fchmod");
  if (::fsync(fd) != 0) cleanup("fsync");
  if (::close(fd) != 0) {
    int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    fail(path, "close");
  }
  return tmp;
}

void move_into_place(const std::string& temporary, const std::string& path) {
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(temporary.c_str());
    errno = saved;
    fail(path, "rename");
  }
  int dfd = ::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  move_into_place(write_temporary_beside(path, contents), path);
}

}  // namespace polychip
