#include "bootstrap/store.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include "polychip/error.hpp"
#include "wire/byte_io.hpp"

namespace polychip::comm {
namespace {

constexpr double kHandshakeSeconds = 5.0;
// Response status: the store gives up on a key and says why (the text);
// kStorePeerLost is also pushed unasked to every rank still setting up.
constexpr uint8_t kStoreOk = 0, kStoreRefusedPeer = 1, kStorePeerLost = 2;

void send_response(int fd, uint8_t status, const std::vector<uint8_t>& value) {
  ByteWriter w;
  w.u8(status);
  w.u32(static_cast<uint32_t>(value.size()));
  w.raw(value.data(), value.size());
  write_exact(fd, w.bytes().data(), w.bytes().size(), Deadline(kHandshakeSeconds),
              "store response");
}

}  // namespace

StoreServer::StoreServer(Fd listener, Credentials credentials, double timeout_seconds)
    : listener_(std::move(listener)),
      credentials_(std::move(credentials)),
      timeout_seconds_(timeout_seconds) {
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) {
    throw_error(StatusCode::kInternal, "store: pipe2 failed");
  }
  thread_ = std::thread([this] { serve(); });
}

StoreServer::~StoreServer() {
  stop_ = true;
  char c = 1;
  if (wake_pipe_[1] >= 0) (void)!::write(wake_pipe_[1], &c, 1);
  join();
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

void StoreServer::join() {
  if (thread_.joinable()) thread_.join();
}

void StoreServer::serve() {
  // A rank may take one timeout to rendezvous and another to connect its
  // mesh: the store outlives both, so a rank that runs out of time says
  // what it waited for instead of every rank seeing the store close (rank
  // 0 blamed itself as gone). Rank 0 stops it when it ends.
  Deadline deadline(2 * timeout_seconds_ + kHandshakeSeconds);
  std::map<std::string, std::vector<uint8_t>> data;
  struct Client {
    Fd fd;
    uint32_t world = 0;
    uint32_t rank = 0;
    bool ready = false;  // added itself to kStoreReadyKey: done setting up
  };
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::pair<Client*, std::string>> waiting;
  uint32_t world = 0;
  auto ready_count = [&]() -> int64_t {
    auto it = data.find(kStoreReadyKey);
    if (it == data.end() || it->second.size() != 8) return 0;
    int64_t v;
    std::memcpy(&v, it->second.data(), 8);
    return v;
  };
  auto satisfy_waiters = [&] {
    for (auto it = waiting.begin(); it != waiting.end();) {
      auto found = data.find(it->second);
      if (found != data.end()) {
        try {
          send_response(it->first->fd.get(), kStoreOk, found->second);
        } catch (const Error&) {
        }
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
  };
  // A rank refused here (wrong secret) only learns it itself; shortly before
  // the others would time out waiting for it, they are told why instead.
  std::string refusal;
  Deadline notice(timeout_seconds_ - std::min(1.0, timeout_seconds_ / 4));
  auto tell_waiters_why = [&] {
    if (refusal.empty() || !notice.expired()) return;
    std::string text = "gave up waiting: it refused a connection: " + refusal;
    for (auto& [client, key] : waiting) {
      try {
        send_response(client->fd.get(), kStoreRefusedPeer,
                      std::vector<uint8_t>(text.begin(), text.end()));
      } catch (const Error&) {
      }
    }
    waiting.clear();
  };
  // A rank that disconnects before it is ready died or failed during set-up:
  // every other rank is told at once (and every later request answered so),
  // instead of waiting for it until the timeout.
  std::string lost;
  auto tell_everyone = [&](const std::string& why, const Client* gone) {
    if (!lost.empty()) return;
    lost = why;
    const std::vector<uint8_t> text(lost.begin(), lost.end());
    for (auto& c : clients) {
      if (c.get() == gone) continue;
      try {
        send_response(c->fd.get(), kStorePeerLost, text);
      } catch (const Error&) {
      }
    }
    waiting.clear();
  };
  auto tell_everyone_lost = [&](const Client& gone) {
    tell_everyone("rank " + std::to_string(gone.rank) +
                      " left the rendezvous before the job was set up (it exited, failed or was "
                      "killed)",
                  &gone);
  };
  // Out of open files, the store can take no more ranks: those it has are
  // told why at once, and the connections left queued stay unaccepted
  // (retried, they would wake every poll until the timeout).
  bool accepting = true;
  // Asked to stop after a rank was lost (rank 0 is failing too), the store
  // still answers the ranks connected to it for a moment, so each of them
  // learns which rank was lost rather than only that rank 0 went away.
  std::optional<Deadline> draining;
  while (!deadline.expired() && !(world > 0 && ready_count() >= world)) {
    if (stop_) {
      if (lost.empty() || clients.empty()) break;
      if (!draining) draining.emplace(kLostNoticeDrainSeconds);
      if (draining->expired()) break;
    }
    tell_waiters_why();
    std::vector<pollfd> fds;
    fds.push_back({listener_.get(), static_cast<short>(accepting ? POLLIN : 0), 0});
    fds.push_back({wake_pipe_[0], POLLIN, 0});
    for (auto& c : clients) fds.push_back({c->fd.get(), POLLIN, 0});
    int wait_ms = deadline.remaining_ms(1000);
    if (!refusal.empty() && !notice.expired())
      wait_ms = std::min(wait_ms, notice.remaining_ms(1000));
    if (draining) wait_ms = std::min(wait_ms, draining->remaining_ms(1000));
    int rc = ::poll(fds.data(), fds.size(), wait_ms);
    if (rc <= 0) continue;
    if (fds[1].revents & POLLIN) {  // the stop request, seen above: take it once
      char c;
      (void)!::read(wake_pipe_[0], &c, 1);
    }
    Fd fd;
    if (fds[0].revents & POLLIN) {
      try {
        fd = accept_tcp(listener_.get());
      } catch (const Error& e) {
        accepting = false;
        tell_everyone("rank 0's rendezvous store cannot take more ranks: " + e.message(), nullptr);
      }
    }
    if (fd.valid()) {
      try {
        Hello hello =
            handshake_as_acceptor(fd.get(), credentials_, deadline.earlier(kHandshakeSeconds));
        if (hello.role != ConnectionRole::kStore || (world != 0 && hello.world != world)) {
          ++refused_;
        } else {
          world = hello.world;
          auto c = std::make_unique<Client>();
          c->fd = std::move(fd);
          c->world = hello.world;
          c->rank = hello.rank;
          clients.push_back(std::move(c));
        }
      } catch (const Error& e) {
        ++refused_;  // stranger, wrong secret or malformed: dropped
        if (e.code() == StatusCode::kFailedPrecondition) refusal = e.message();
      }
    }
    std::vector<Client*> gone;
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Client* client = clients[i - 2].get();
      try {
        uint32_t length = 0;
        read_exact(client->fd.get(), &length, 4, Deadline(kHandshakeSeconds), "store request");
        if (length > kMaxStoreValue + kMaxStoreKey + 16) {
          throw_error(StatusCode::kDataCorruption, "store request too long");
        }
        std::vector<uint8_t> body(length);
        read_exact(client->fd.get(), body.data(), length, Deadline(kHandshakeSeconds),
                   "store request");
        StoreRequest req = parse_store_request(body);
        if (!lost.empty()) {
          send_response(client->fd.get(), kStorePeerLost,
                        std::vector<uint8_t>(lost.begin(), lost.end()));
        } else if (req.op == StoreOp::kSet) {
          data[req.key] = req.value;
          send_response(client->fd.get(), kStoreOk, {});
        } else if (req.op == StoreOp::kAdd) {
          int64_t inc, cur = 0;
          std::memcpy(&inc, req.value.data(), 8);
          auto& slot = data[req.key];
          if (slot.size() == 8) std::memcpy(&cur, slot.data(), 8);
          cur += inc;
          slot.resize(8);
          std::memcpy(slot.data(), &cur, 8);
          std::vector<uint8_t> out(8);
          std::memcpy(out.data(), &cur, 8);
          send_response(client->fd.get(), kStoreOk, out);
          if (req.key == kStoreReadyKey) client->ready = true;
        } else {
          waiting.emplace_back(client, req.key);
        }
        satisfy_waiters();
        tell_waiters_why();
      } catch (const Error&) {
        gone.push_back(client);
      }
    }
    for (Client* g : gone) {
      std::erase_if(waiting, [&](auto& w) { return w.first == g; });
      if (!g->ready) tell_everyone_lost(*g);
      std::erase_if(clients, [&](auto& c) { return c.get() == g; });
    }
  }
  // Out of time (a busy machine may have slept through the notice, or the
  // refusal came in the last look): the ranks still waiting learn why
  // before their connections close (the notice is always due by now).
  tell_waiters_why();
}

StoreClient::StoreClient(const std::string& host, uint16_t port, const Credentials& credentials,
                         uint32_t rank, uint32_t world, const Deadline& deadline)
    : deadline_(deadline) {
  fd_ = connect_tcp(host, port, deadline, "the rendezvous store", static_cast<int>(rank));
  Hello hello;
  hello.role = ConnectionRole::kStore;
  hello.rank = rank;
  hello.world = world;
  try {
    handshake_as_connector(fd_.get(), hello, credentials, deadline,
                           "rendezvous store " + host + ":" + std::to_string(port));
  } catch (const Error& e) {
    // A store that hangs up mid-handshake is most often rank 0 dying.
    if (e.code() != StatusCode::kFailedPrecondition && e.code() != StatusCode::kUnavailable) throw;
    throw Error(e.code(), e.message() + "; or rank 0, which serves the store, " + kStoreServerGone);
  }
}

std::vector<uint8_t> StoreClient::request(const StoreRequest& r) {
  std::vector<uint8_t> body = encode_store_request(r);
  // Length and body in one write: as two, Nagle held the body back until the
  // store's delayed ACK of the length (40 ms per request on Linux).
  ByteWriter framed;
  framed.u32(static_cast<uint32_t>(body.size()));
  framed.raw(body.data(), body.size());
  uint8_t header[5];
  try {
    write_exact(fd_.get(), framed.bytes().data(), framed.bytes().size(), deadline_,
                "store request");
    read_exact(fd_.get(), header, 5, deadline_, "store response");
  } catch (const Error& e) {
    const std::string context = "rendezvous store, waiting for key '" + r.key + "'";
    if (e.code() != StatusCode::kUnavailable) throw e.annotate(context);
    const std::string notice = unread_peer_lost_notice();
    if (!notice.empty()) throw Error(StatusCode::kUnavailable, notice);
    // Only rank 0's store ends a store connection.
    throw Error(StatusCode::kUnavailable, context + ": rank 0, which serves the store, " +
                                              kStoreServerGone + " (" + e.message() + ")");
  }
  uint32_t n;
  std::memcpy(&n, header + 1, 4);
  if (header[0] > kStorePeerLost || n > kMaxStoreValue) {
    throw_error(StatusCode::kDataCorruption, "rendezvous store: malformed response");
  }
  std::vector<uint8_t> value(n);
  read_exact(fd_.get(), value.data(), n, deadline_, "store response");
  if (header[0] == kStoreRefusedPeer) {
    throw_error(StatusCode::kFailedPrecondition, "rendezvous store, waiting for key '" + r.key +
                                                     "', " +
                                                     std::string(value.begin(), value.end()));
  }
  if (header[0] == kStorePeerLost)
    throw_error(StatusCode::kUnavailable, std::string(value.begin(), value.end()));
  return value;
}

std::string StoreClient::unread_peer_lost_notice() {
  uint8_t header[5];
  if (::recv(fd_.get(), header, sizeof header, MSG_PEEK | MSG_DONTWAIT) != sizeof header ||
      header[0] != kStorePeerLost) {
    return {};
  }
  uint32_t n;
  std::memcpy(&n, header + 1, 4);
  if (n > kMaxStoreValue) return {};
  std::string text(sizeof header + n, '\0');
  if (::recv(fd_.get(), text.data(), text.size(), MSG_DONTWAIT) !=
      static_cast<ssize_t>(text.size()))
    return {};
  return text.substr(sizeof header);
}

void StoreClient::set(const std::string& key, const std::vector<uint8_t>& value) {
  request({StoreOp::kSet, key, value});
}

std::vector<uint8_t> StoreClient::get(const std::string& key) {
  return request({StoreOp::kGet, key, {}});
}

int64_t StoreClient::add(const std::string& key, int64_t increment) {
  std::vector<uint8_t> v(8);
  std::memcpy(v.data(), &increment, 8);
  std::vector<uint8_t> out = request({StoreOp::kAdd, key, v});
  int64_t result = 0;
  if (out.size() == 8) std::memcpy(&result, out.data(), 8);
  return result;
}

std::string StoreClient::local_address() const { return comm::local_address(fd_.get()); }

LostPeerWatch::LostPeerWatch(const StoreClient& store)
    : fd_(store.fd()), cancelled_(std::make_shared<std::atomic<bool>>(false)) {
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) throw_error(StatusCode::kInternal, "pipe2 failed");
  thread_ = std::thread([this] {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    int rc;
    do rc = ::poll(fds, 2, -1);
    while (rc < 0 && errno == EINTR);
    // Stopped with nothing from the store: the connection is the caller's again.
    if (rc < 0 || (fds[1].revents && !fds[0].revents)) return;
    uint8_t header[5];
    try {
      read_exact(fd_, header, sizeof header, Deadline(kHandshakeSeconds), "rendezvous store");
      uint32_t n;
      std::memcpy(&n, header + 1, 4);
      if (header[0] != kStorePeerLost || n > kMaxStoreValue)
        throw_error(StatusCode::kDataCorruption, "rendezvous store: unexpected message");
      std::string text(n, '\0');
      read_exact(fd_, text.data(), n, Deadline(kHandshakeSeconds), "rendezvous store");
      reason_ = text;
    } catch (const Error&) {
      reason_ = std::string(
                    "the rendezvous store closed before the job was set up: rank 0, "
                    "which serves it, ") +
                kStoreServerGone;
    }
    cancelled_->store(true);
  });
}

LostPeerWatch::~LostPeerWatch() {
  stop();
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

std::string LostPeerWatch::stop() {
  if (thread_.joinable()) {
    char c = 1;
    (void)!::write(wake_pipe_[1], &c, 1);
    thread_.join();
  }
  return reason_;
}

std::string LostPeerWatch::stop_after(std::chrono::milliseconds grace) {
  const auto until = std::chrono::steady_clock::now() + grace;
  while (!cancelled_->load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return stop();
}

}  // namespace polychip::comm
