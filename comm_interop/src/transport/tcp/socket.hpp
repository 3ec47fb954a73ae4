// Thin POSIX TCP helpers: RAII descriptor, deadlines, listen/connect with
// retry, exact reads/writes that give up at a deadline with a clear error.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace polychip::comm {

using Clock = std::chrono::steady_clock;

class Deadline {
 public:
  // `cancel`: a flag another thread may raise to end every wait on this
  // deadline (and on deadlines made from it) early, as if it had passed.
  explicit Deadline(double seconds_from_now,
                    std::shared_ptr<const std::atomic<bool>> cancel = nullptr);
  Clock::time_point at() const { return at_; }
  bool expired() const { return Clock::now() >= at_ || cancelled(); }
  bool cancelled() const { return cancel_ && cancel_->load(); }
  // Milliseconds left, clamped to [0, cap_ms]; for poll(). A cancellable
  // deadline caps waits at kCancelPollMs so they notice the flag.
  int remaining_ms(int cap_ms = 1 << 30) const;
  // The earlier of this deadline and `seconds_from_now`; keeps the cancel flag.
  Deadline earlier(double seconds_from_now) const;

  static constexpr int kCancelPollMs = 50;

 private:
  Clock::time_point at_;
  std::shared_ptr<const std::atomic<bool>> cancel_;
};

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }  // the caller owns it now
  void reset();

 private:
  int fd_ = -1;
};

// Listens on `bind_address` ("" = any IPv4), port 0 = ephemeral. Returns the
// socket and the bound port.
std::pair<Fd, uint16_t> listen_tcp(const std::string& bind_address, uint16_t port);
// Takes over a listening TCP socket this process inherited (`fd`, named by
// the variable `source` in errors) after checking that it listens on `port`;
// marks it close-on-exec.
Fd adopt_listening_socket(int fd, uint16_t port, const std::string& source);
// Connects, retrying refused/unreachable attempts and names that do not
// resolve (yet) until `deadline`. `peer_name` ("the rendezvous store",
// "rank 0 (...)") names the far end for rank `my_rank` in errors and in the
// one notice on stderr that a connection still fails after a while.
Fd connect_tcp(const std::string& host, uint16_t port, const Deadline& deadline,
               const std::string& peer_name, int my_rank);
// The next connection waiting on `listen_fd`, or an invalid Fd where the one
// waiting went away (accept(2): such errors are to be treated like EAGAIN).
// Throws UNAVAILABLE where accepting cannot succeed by retrying (out of open
// files or memory: the connection stays queued and the listener readable,
// so a caller that retried would spin until its timeout).
Fd accept_tcp(int listen_fd);

void set_nonblocking(int fd, bool on);
void tune_bulk_socket(int fd);
// The local address of a connected socket (the interface that routes there).
std::string local_address(int fd);
std::string peer_address(int fd);

// Exact transfers on a (blocking or not) socket, bounded by `deadline`.
// Throw UNAVAILABLE when the peer closes, DEADLINE_EXCEEDED at the deadline.
void write_exact(int fd, const void* data, size_t size, const Deadline& deadline, const char* what);
void read_exact(int fd, void* data, size_t size, const Deadline& deadline, const char* what);

void random_bytes(void* out, size_t size);
std::string local_hostname();

}  // namespace polychip::comm
