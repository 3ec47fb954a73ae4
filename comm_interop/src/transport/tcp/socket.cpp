#include "transport/tcp/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "polychip/error.hpp"
#include "transport/open_file_limit.hpp"

namespace polychip::comm {
namespace {

std::string errno_text(int err) { return std::string(std::strerror(err)); }

std::string sockaddr_text(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof(buf));
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

}  // namespace

Deadline::Deadline(double seconds, std::shared_ptr<const std::atomic<bool>> cancel)
    : cancel_(std::move(cancel)) {
  // Longer (POLYCHIP_COMM_TIMEOUT=1e300, inf) means "no deadline": the
  // nanosecond count must stay one that now() can be added to (out of range,
  // the conversion gave INT64_MIN here, a deadline long past).
  constexpr double kLongestSeconds = 1e9;  // 31 years
  const double bounded = seconds > 0 ? std::min(seconds, kLongestSeconds) : 0;
  at_ = Clock::now() +
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(bounded));
}

int Deadline::remaining_ms(int cap_ms) const {
  if (cancelled()) return 0;
  if (cancel_) cap_ms = std::min(cap_ms, kCancelPollMs);
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
  if (left < 0) return 0;
  return left > cap_ms ? cap_ms : static_cast<int>(left);
}

Deadline Deadline::earlier(double seconds) const {
  Deadline d(seconds, cancel_);
  if (at_ < d.at_) d.at_ = at_;
  return d;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::pair<Fd, uint16_t> listen_tcp(const std::string& bind_address, uint16_t port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throw_error(StatusCode::kUnavailable, "socket(): " + errno_text(errno));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (bind_address.empty() || bind_address == "0.0.0.0") {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (inet_pton(AF_INET, bind_address.c_str(), &addr.sin_addr) != 1) {
    throw_error(StatusCode::kInvalidArgument,
                "listen address '" + bind_address + "' is not an IPv4 literal");
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    throw_error(StatusCode::kUnavailable, "bind(" + (bind_address.empty() ? "*" : bind_address) +
                                              ":" + std::to_string(port) +
                                              "): " + errno_text(errno));
  }
  if (::listen(fd.get(), 512) != 0) {
    throw_error(StatusCode::kUnavailable, "listen(): " + errno_text(errno));
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  return {std::move(fd), ntohs(addr.sin_port)};
}

Fd adopt_listening_socket(int fd, uint16_t port, const std::string& source) {
  const std::string what = source + "=" + std::to_string(fd);
  int listening = 0;
  socklen_t size = sizeof(listening);
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0) {
    throw_error(StatusCode::kFailedPrecondition,
                what + ": not an open socket (" + errno_text(errno) + ")");
  }
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (!listening || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      addr.sin_family != AF_INET || ntohs(addr.sin_port) != port) {
    throw_error(StatusCode::kFailedPrecondition,
                what + ": not a TCP socket listening on port " + std::to_string(port));
  }
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return Fd(fd);
}

Fd connect_tcp(const std::string& host, uint16_t port, const Deadline& deadline,
               const std::string& peer_name, int my_rank) {
  const std::string target = peer_name + " at " + host + ":" + std::to_string(port);
  // A peer that is slow to start is refused for a moment; one that is still
  // refused or unresolvable after this long is more likely a wrong address
  // (MASTER_ADDR, POLYCHIP_COMM_ADVERTISE_ADDR), said once instead of
  // waiting out the whole timeout in silence.
  const auto notice_at =
      Clock::now() +
      std::min<Clock::duration>(std::chrono::seconds(10), (deadline.at() - Clock::now()) / 3);
  bool noticed = false;
  std::string last_error = "no attempt made";
  int delay_ms = 5;
  do {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    // Freed on every way out: the return, the refusal out of files, the retry.
    const std::unique_ptr<addrinfo, void (*)(addrinfo*)> resolved(res, ::freeaddrinfo);
    if (rc != 0) {
      last_error = std::string("getaddrinfo: ") + gai_strerror(rc);
    } else {
      for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
        if (!fd.valid()) {
          const int err = errno;
          last_error = "socket(): " + errno_text(err);
          if (err == EMFILE)  // retrying frees no file
            throw_error(StatusCode::kUnavailable, "cannot connect to " + target + ": " +
                                                      last_error + " " + open_file_limit_text());
          continue;
        }
        set_nonblocking(fd.get(), true);
        int c = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
        if (c != 0 && errno == EINPROGRESS) {
          pollfd p{fd.get(), POLLOUT, 0};
          int pr = ::poll(&p, 1, deadline.remaining_ms(2000));
          int err = 0;
          socklen_t len = sizeof(err);
          if (pr == 1) {
            ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
            c = err == 0 ? 0 : -1;
            errno = err;
          } else {
            c = -1;
            errno = ETIMEDOUT;
          }
        }
        if (c == 0) {
          set_nonblocking(fd.get(), false);
          return fd;
        }
        last_error = errno_text(errno);
      }
    }
    if (!noticed && Clock::now() >= notice_at && !deadline.expired()) {
      noticed = true;
      const std::chrono::duration<double> left = deadline.at() - Clock::now();
      std::fprintf(stderr,
                   "polychip comm: rank %d: still cannot connect to %s (%s); retrying until the "
                   "timeout, %.0f s from now\n",
                   my_rank, target.c_str(), last_error.c_str(), left.count());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    delay_ms = std::min(delay_ms * 2, 200);
  } while (!deadline.expired());
  throw_error(StatusCode::kDeadlineExceeded,
              "could not connect to " + target + " before the timeout (" + last_error + ")");
}

Fd accept_tcp(int listen_fd) {
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) return Fd(fd);
  const int err = errno;
  switch (err) {
    case EAGAIN:
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case EPERM:  // a firewall rule refused this one connection
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return Fd();
    case EMFILE:
      throw_error(StatusCode::kUnavailable,
                  "accept(): " + errno_text(err) + " " + open_file_limit_text());
    default:
      throw_error(StatusCode::kUnavailable, "accept(): " + errno_text(err));
  }
}

void set_nonblocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
}

void tune_bulk_socket(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

std::string local_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  return sockaddr_text(ss);
}

std::string peer_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return sockaddr_text(ss);
}

void write_exact(int fd, const void* data, size_t size, const Deadline& deadline,
                 const char* what) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      pollfd pfd{fd, POLLOUT, 0};
      if (::poll(&pfd, 1, deadline.remaining_ms()) == 0 && deadline.expired()) {
        throw_error(StatusCode::kDeadlineExceeded, std::string(what) + ": send timed out");
      }
      continue;
    }
    throw_error(StatusCode::kUnavailable,
                std::string(what) + ": send failed: " + errno_text(n < 0 ? errno : EPIPE));
  }
}

void read_exact(int fd, void* data, size_t size, const Deadline& deadline, const char* what) {
  auto* p = static_cast<uint8_t*>(data);
  while (size > 0) {
    ssize_t n = ::recv(fd, p, size, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      throw_error(StatusCode::kUnavailable,
                  std::string(what) + ": the other side closed the connection");
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      pollfd pfd{fd, POLLIN, 0};
      int rc = ::poll(&pfd, 1, deadline.remaining_ms());
      if (rc == 0 && deadline.expired()) {
        throw_error(StatusCode::kDeadlineExceeded, std::string(what) + ": receive timed out");
      }
      continue;
    }
    throw_error(StatusCode::kUnavailable,
                std::string(what) + ": receive failed: " + errno_text(errno));
  }
}

void random_bytes(void* out, size_t size) {
  auto* p = static_cast<uint8_t*>(out);
  while (size > 0) {
    ssize_t n = ::getrandom(p, size, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_error(StatusCode::kInternal, "getrandom(): " + errno_text(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

std::string local_hostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

}  // namespace polychip::comm
