// Bytes read from a TCP socket ahead of the frame parser. Reading exactly
// what the parser asks for costs a recv() for a frame's header, one for
// its payload and one more that finds the socket empty: three syscalls for
// an 8-byte all-reduce. One recv() into the inbox takes a small frame (and
// whatever follows it) at once, and a short read says the socket is empty.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace polychip::comm {

class SocketInbox {
 public:
  // Reads of at least this many bytes go straight into the caller's buffer
  // once the inbox is empty (bulk payloads are not copied twice).
  static constexpr size_t kDirectBytes = 4096;
  static constexpr size_t kCapacity = 16384;

  // Like recv(fd, data, size, MSG_DONTWAIT): the inbox's bytes first. After
  // a short read in this pass, -1 with EAGAIN without asking the socket.
  ssize_t receive(int fd, void* data, size_t size);
  // A new pass over the socket (poll() said it is readable, or a caller
  // looks for what a peer sent): the next receive() asks the socket again.
  void new_pass() { drained_ = false; }
  // Bytes read and not handed out yet: poll() on the socket does not see them.
  bool holds_bytes() const { return begin_ < end_; }

 private:
  std::unique_ptr<uint8_t[]> bytes_;  // kCapacity, allocated on first use
  size_t begin_ = 0, end_ = 0;
  bool drained_ = false;  // this pass's last read from the socket was short
};

}  // namespace polychip::comm
