#include "transport/tcp/socket_inbox.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace polychip::comm {

ssize_t SocketInbox::receive(int fd, void* data, size_t size) {
  if (begin_ == end_) {
    if (drained_) {
      errno = EAGAIN;
      return -1;
    }
    if (size >= kDirectBytes) return ::recv(fd, data, size, MSG_DONTWAIT);
    if (!bytes_) bytes_ = std::make_unique<uint8_t[]>(kCapacity);
    const ssize_t n = ::recv(fd, bytes_.get(), kCapacity, MSG_DONTWAIT);
    if (n <= 0) return n;
    begin_ = 0;
    end_ = static_cast<size_t>(n);
    drained_ = end_ < kCapacity;
  }
  const size_t n = std::min(size, end_ - begin_);
  std::memcpy(data, bytes_.get() + begin_, n);
  begin_ += n;
  return static_cast<ssize_t>(n);
}

}  // namespace polychip::comm
