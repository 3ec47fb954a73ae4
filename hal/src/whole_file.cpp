#include "polychip/whole_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "polychip/error.hpp"

namespace polychip {

std::string read_whole_file(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw_error(StatusCode::kNotFound,
                what + ": cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw_error(StatusCode::kInvalidArgument, what + ": " + path + " is a folder, not a file");
  }
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n > 0) {
      bytes.append(chunk, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      const int err = errno;
      ::close(fd);
      throw_error(StatusCode::kUnavailable,
                  what + ": cannot read " + path + ": " + std::strerror(err));
    }
  }
  ::close(fd);
  return bytes;
}

}  // namespace polychip
