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

void write_file_atomically(const std::string& path, std::string_view contents) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
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
    ::unlink(tmp.c_str());
    fail(path, "close");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    fail(path, "rename");
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace polychip
