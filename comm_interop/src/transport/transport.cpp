#include "transport/transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <thread>

#include "polychip/error.hpp"
#include "transport/byte_ring.hpp"
#include "transport/rdma/rma_ring.hpp"
#include "transport/shm/shm_ring.hpp"
#include "transport/tcp/socket_inbox.hpp"
#include "wire/crc32c.hpp"

namespace polychip::comm {
namespace {

// Receive-and-reduce reads at most this much before reducing, so the
// received piece is reduced while it is still in cache.
constexpr uint64_t kReducePiece = 256 * 1024;
constexpr double kHandshakeSeconds = 5.0;
// How long a rank polls its shared-memory rings (and then its sockets)
// before it sleeps: a peer on another core usually answers well within it,
// and a sleep costs a wake-up (and for a ring a doorbell: a TCP send), tens
// of microseconds.
constexpr int kSpinMicros = 50;
// Plans up to this many bytes (every send and receive) poll their sockets
// before sleeping, as the rings are polled.
constexpr uint64_t kSpinPlanBytes = 256 * 1024;
// RDMA lanes cannot be woken by a doorbell: a rank keeps polling them this
// long after they last moved, then looks every millisecond.
constexpr int kRdmaSpinMicros = 2000;
// How long a spinning rank only pauses before it starts yielding its core.
constexpr int kPausedMicros = 20;
// A spinning rank reads the clock once every this many looks.
constexpr unsigned kLooksPerClockRead = 16;
// How long a rank that timed out waits for its peers to say where they wait.
constexpr double kAskPeersSeconds = 1.0;
// How long a rank that lost a peer waits for an abort frame that names the
// cause (see fail_lost_peer); short beside the 5 s a dead rank may take.
constexpr double kLostPeerGraceSeconds = 0.25;

// Tells the core this is a spin loop (lets a sibling hyperthread run).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// CPUs this process may run on.
int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace

struct Transport::Connection {
  Fd fd;  // invalid on a lane
  int peer = -1;
  int index = 0;
  // A lane (shared memory or RDMA): the ring pair, and the TCP connection
  // (socket 0) that carries its doorbells.
  std::unique_ptr<ByteRing> rx, tx;
  Connection* doorbell = nullptr;
  // An RDMA lane's rings (rx and tx as such), which also place payloads.
  RmaRing* rma_rx = nullptr;
  RmaRing* rma_tx = nullptr;
  // A shared-memory lane's rings also carry mailboxes (theirs to us, ours
  // to them), and the running exchange's mail it owes: one of each.
  ShmRing* mail_in = nullptr;
  ShmRing* mail_out = nullptr;
  bool mail_to_post = false;
  bool mail_to_take = false;
  // 1 + the sequence number of our latest message in each slot, and of the
  // peer's latest message taken. A peer that posted for collective T had
  // finished every collective before it, so it took our messages of those
  // (pairs exchange mail both ways or not at all): our slot of seq P < T is
  // free without asking.
  uint64_t mail_posted[2] = {0, 0};
  uint64_t mail_peer_entered = 0;
  std::string control_out;  // doorbell frames not yet written (TCP only)
  SocketInbox inbox;        // bytes read ahead of the frame parser (TCP only)
  bool closed = false;      // the peer closed it cleanly between frames
  int pending_receives = 0;
  // Receive side.
  uint8_t header[kFrameHeaderSize];
  size_t header_got = 0;
  FrameHeader frame;
  bool parked = false;  // `frame` belongs to a later plan; payload not read yet
  int receive_task = -1;
  bool reading_abort = false;
  bool reading_placements = false;
  std::string control_payload;  // of an abort or placement frame
  // The frame's payload is placed (RDMA lanes): it has landed once the
  // ring's placed bytes reach placed_until; placed_taken counts those
  // earlier frames took.
  bool placed = false;
  uint64_t placed_until = 0, placed_taken = 0;
  uint64_t got = 0;
  uint64_t reduced = 0;
  uint32_t crc = 0;
  std::vector<uint8_t> scratch;
  // Send side.
  std::deque<int> queue;
  int send_task = -1;
  uint8_t send_header[kFrameHeaderSize];
  uint64_t sent = 0;  // over header + payload
  bool writing = false;
  // The running send's payload goes to this placement instead.
  bool send_placed = false;
  RemoteRegion send_to;
  // A lane's sends whose payload the ring took as a loan (ByteRing::lend)
  // or placed: each completes once the ring has let go of the stream up to
  // its end and its placed bytes were written.
  uint64_t tx_taken = 0, tx_placed = 0;
  struct LentSend {
    int task;
    uint64_t stream_end, placed_end;
  };
  std::deque<LentSend> lent_sends;
};

size_t Transport::KeyHash::operator()(const Key& k) const {
  uint64_t h = k.seq * 0x9e3779b97f4a7c15ull;
  h ^= (uint64_t{k.step} << 32 | k.chunk) + 0x7f4a7c159e3779b9ull + (h << 6) + (h >> 2);
  h ^= (uint64_t(k.peer) << 8 | uint64_t(k.kind)) + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

Transport::Transport(int rank, std::vector<PeerInfo> peers, Fd listener,
                     const Credentials& credentials, TransportOptions options)
    : rank_(rank), peers_(std::move(peers)), options_(options) {
  if (options_.sockets_per_peer < 1 ||
      options_.sockets_per_peer > static_cast<int>(kMaxSocketsPerPeer)) {
    throw_error(StatusCode::kInvalidArgument, "sockets per peer must be in [1, " +
                                                  std::to_string(kMaxSocketsPerPeer) + "], got " +
                                                  std::to_string(options_.sockets_per_peer));
  }
  next_send_seq_.assign(peers_.size(), 0);
  next_recv_seq_.assign(peers_.size(), 0);
  newest_collective_seen_.assign(peers_.size(), 0);
  if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw_error(StatusCode::kInternal, "transport: pipe2 failed");
  }
  connections_.resize(peers_.size());
  lane_of_peer_.assign(peers_.size(), nullptr);
  mailbox_peers_.assign(peers_.size(), false);
  link_of_peer_.assign(peers_.size(), "tcp");
  connect_mesh(std::move(listener), credentials);
  const Deadline deadline(options_.timeout_seconds, options_.setup_cancelled);
  setup_shared_memory(deadline);
  setup_rdma(deadline);  // also without RDMA: the peers' offers must be answered
  int ranks_here = 1;
  for (size_t r = 0; r < peers_.size(); ++r)
    ranks_here += static_cast<int>(r) != rank_ && peers_[r].host == peers_[rank_].host;
  spin_yields_ = ranks_here > usable_cpus();
}

Transport::~Transport() {
  for (Connection* c : all_connections_) {
    if (c->fd.valid()) ::shutdown(c->fd.get(), SHUT_RDWR);
  }
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

std::string Transport::describe_peer(int r) const {
  const PeerInfo& p = peers_[r];
  return "rank " + std::to_string(r) + " (" + p.host + " " + p.address + ":" +
         std::to_string(p.port) + ", pid " + std::to_string(p.pid) + ", " + p.device_type + ")";
}

void Transport::connect_mesh(Fd listener, const Credentials& credentials) {
  Deadline deadline(options_.timeout_seconds, options_.setup_cancelled);
  const int world = static_cast<int>(peers_.size());
  const int sockets = options_.sockets_per_peer;
  auto add = [&](int peer, int index, Fd fd) {
    auto c = std::make_unique<Connection>();
    c->fd = std::move(fd);
    c->peer = peer;
    c->index = index;
    set_nonblocking(c->fd.get(), true);
    tune_bulk_socket(c->fd.get());
    all_connections_.push_back(c.get());
    connections_[peer][index] = std::move(c);
  };
  for (int p = 0; p < world; ++p) connections_[p].resize(p == rank_ ? 0 : sockets);
  // Connect downwards, accept upwards: no cycle, so no deadlock.
  for (int peer = 0; peer < rank_; ++peer) {
    for (int s = 0; s < sockets; ++s) {
      Fd fd = connect_tcp(peers_[peer].address, peers_[peer].port, deadline,
                          "rank " + std::to_string(peer), rank_);
      Hello hello;
      hello.role = ConnectionRole::kPeer;
      hello.rank = static_cast<uint32_t>(rank_);
      hello.world = static_cast<uint32_t>(world);
      hello.socket_index = static_cast<uint32_t>(s);
      handshake_as_connector(fd.get(), hello, credentials, deadline, describe_peer(peer));
      add(peer, s, std::move(fd));
    }
  }
  int expected = (world - 1 - rank_) * sockets;
  while (expected > 0) {
    pollfd p{listener.get(), POLLIN, 0};
    int rc = ::poll(&p, 1, deadline.remaining_ms(1000));
    if (rc <= 0) {
      if (deadline.expired()) {
        std::string missing;
        for (int peer = rank_ + 1; peer < world; ++peer) {
          const auto& socket = connections_[peer];
          if (std::find(socket.begin(), socket.end(), nullptr) != socket.end()) {
            missing += " " + std::to_string(peer);
          }
        }
        throw_error(StatusCode::kDeadlineExceeded,
                    "communicator setup: rank " + std::to_string(rank_) +
                        " timed out waiting for connections from ranks" + missing);
      }
      continue;
    }
    Fd fd;
    try {
      fd = accept_tcp(listener.get());
    } catch (const Error& e) {  // out of open files: no retry can take the next peer
      throw e.annotate("communicator setup: rank " + std::to_string(rank_));
    }
    if (!fd.valid()) continue;
    try {
      Hello hello =
          handshake_as_acceptor(fd.get(), credentials, deadline.earlier(kHandshakeSeconds));
      int from = static_cast<int>(hello.rank);
      if (hello.role != ConnectionRole::kPeer || static_cast<int>(hello.world) != world ||
          from <= rank_ || static_cast<int>(hello.socket_index) >= sockets ||
          connections_[from][hello.socket_index]) {
        ++refused_connections_;
        continue;
      }
      add(from, static_cast<int>(hello.socket_index), std::move(fd));
      --expected;
    } catch (const Error&) {
      ++refused_connections_;  // stranger or wrong secret: dropped, keep waiting
    }
  }
}

void Transport::setup_shared_memory(const Deadline& deadline) {
  const int world = static_cast<int>(peers_.size());
  std::vector<std::unique_ptr<ShmRing>> rx(world), tx(world);
  std::vector<bool> offer_taken(world, false);
  auto socket0 = [&](int p) { return connections_[p][0]->fd.get(); };
  // Every side offers first, then answers, then reads the answers: the
  // messages are small, so no write waits on a read.
  for (int p = 0; p < world; ++p) {
    if (p == rank_) continue;
    ShmOffer offer;
    if (options_.shared_memory && peers_[p].host == peers_[rank_].host) {
      try {
        rx[p] = std::make_unique<ShmRing>(ShmRing::create(options_.shm_ring_bytes));
        offer.offered = true;
        offer.capacity = rx[p]->capacity();
        offer.token = rx[p]->token();
        offer.name = rx[p]->name();
      } catch (const Error&) {
        rx[p].reset();  // no shared memory here: this link stays on TCP
      }
    }
    std::vector<uint8_t> bytes = encode_shm_offer(offer);
    write_exact(socket0(p), bytes.data(), bytes.size(), deadline, "shared-memory offer");
  }
  for (int p = 0; p < world; ++p) {
    if (p == rank_) continue;
    uint8_t bytes[kShmOfferSize];
    read_exact(socket0(p), bytes, sizeof(bytes), deadline, "shared-memory offer");
    ShmOffer offer = parse_shm_offer(bytes);
    if (offer.offered && options_.shared_memory) {
      try {
        tx[p] = std::make_unique<ShmRing>(ShmRing::open(offer.name, offer.token, offer.capacity));
      } catch (const Error&) {
        tx[p].reset();  // another host or container with the same name: TCP
      }
    }
    std::vector<uint8_t> reply = encode_shm_reply(tx[p] != nullptr);
    write_exact(socket0(p), reply.data(), reply.size(), deadline, "shared-memory reply");
  }
  for (int p = 0; p < world; ++p) {
    if (p == rank_) continue;
    uint8_t bytes[kShmReplySize];
    read_exact(socket0(p), bytes, sizeof(bytes), deadline, "shared-memory reply");
    offer_taken[p] = parse_shm_reply(bytes);
    if (rx[p]) rx[p]->unlink();
  }
  // Both sides know both answers, so they agree on which links use rings.
  for (int p = 0; p < world; ++p) {
    if (p == rank_ || !rx[p] || !tx[p] || !offer_taken[p]) continue;
    add_lane(p, std::move(rx[p]), std::move(tx[p]), "shm");
  }
}

void Transport::add_lane(int peer, std::unique_ptr<ByteRing> rx, std::unique_ptr<ByteRing> tx,
                         const char* kind) {
  auto lane = std::make_unique<Connection>();
  lane->peer = peer;
  lane->index = -1;
  lane->rx = std::move(rx);
  lane->tx = std::move(tx);
  lane->doorbell = connections_[peer][0].get();
  lane->rma_rx = dynamic_cast<RmaRing*>(lane->rx.get());
  lane->rma_tx = dynamic_cast<RmaRing*>(lane->tx.get());
  lane->mail_in = dynamic_cast<ShmRing*>(lane->rx.get());
  lane->mail_out = dynamic_cast<ShmRing*>(lane->tx.get());
  if (lane->mail_in && lane->mail_out) {
    mailbox_peers_[peer] = true;
    ++mailbox_count_;
  } else {
    lane->mail_in = lane->mail_out = nullptr;
  }
  lanes_wake_by_doorbell_ =
      lanes_wake_by_doorbell_ && lane->rx->wakes_by_doorbell() && lane->tx->wakes_by_doorbell();
  lane_of_peer_[peer] = lane.get();
  link_of_peer_[peer] = kind;
  all_connections_.push_back(lane.get());
  lanes_.push_back(std::move(lane));
}

std::unique_ptr<RmaEndpoint> Transport::open_rdma_endpoint(std::string* why_not) const {
  std::vector<std::string> providers;
  if (!options_.net_provider.empty()) {
    providers = {options_.net_provider};
  } else if (const char* env = std::getenv("POLYCHIP_NET_PROVIDER"); env && *env) {
    providers = {env};
  } else {
    for (const std::string& p : FabricRma::preferred_providers()) {
      // Across hosts by default only a NIC's provider beats the TCP mesh.
      const bool nic = p != "tcp;ofi_rxm";
      if (nic || options_.rdma == TransportOptions::Rdma::kEveryPeer) providers.push_back(p);
    }
  }
  std::string reasons;
  for (const std::string& provider : providers) {
    try {
      // tcp binds to the address peers reach this rank at; shm has no address to bind.
      const std::string node = provider == "shm" ? "" : peers_[rank_].address;
      return std::make_unique<RmaEndpoint>(std::make_unique<FabricRma>(provider, node), rank_,
                                           world());
    } catch (const Error& e) {
      reasons += (reasons.empty() ? "" : "; ") + e.message();
    }
  }
  *why_not = reasons.empty() ? "no provider to try" : reasons;
  return nullptr;
}

void Transport::setup_rdma(const Deadline& deadline) {
  const int world = static_cast<int>(peers_.size());
  auto wanted = [&](int p) {
    if (p == rank_ || lane_of_peer_[p] || options_.rdma == TransportOptions::Rdma::kOff)
      return false;
    return options_.rdma == TransportOptions::Rdma::kEveryPeer ||
           peers_[p].host != peers_[rank_].host;
  };
  bool any = false;
  for (int p = 0; p < world; ++p) any = any || wanted(p);
  std::string why_not;
  if (any) {
    try {
      rma_ = open_rdma_endpoint(&why_not);
    } catch (const Error& e) {
      why_not = e.message();
    }
    if (!rma_) {
      std::fprintf(stderr, "polychip comm: rank %d: no RDMA lanes, peers stay on TCP: %s\n", rank_,
                   why_not.c_str());
    }
  }
  std::vector<std::unique_ptr<RmaRing>> rx(world), tx(world);
  std::vector<RdmaOffer> theirs(world);
  std::vector<bool> taken(world, false);
  // Every peer without a shared-memory lane gets an offer (empty when none
  // is wanted), so both sides always exchange the same messages.
  auto exchanged = [&](int p) { return p != rank_ && !lane_of_peer_[p]; };
  auto socket0 = [&](int p) { return connections_[p][0]->fd.get(); };
  for (int p = 0; p < world; ++p) {
    if (!exchanged(p)) continue;
    RdmaOffer offer;
    if (rma_ && wanted(p)) {
      rx[p] = RmaRing::receiver(*rma_, options_.rdma_ring_bytes);
      tx[p] = RmaRing::sender(*rma_, options_.rdma_ring_bytes);
      offer.offered = true;
      offer.provider = rma_->fabric().provider();
      offer.address = rma_->fabric().address();
      offer.ring = rx[p]->region();
      offer.credit_box = tx[p]->region();
    }
    std::vector<uint8_t> bytes = encode_rdma_offer(offer);
    write_exact(socket0(p), bytes.data(), bytes.size(), deadline, "RDMA offer");
  }
  for (int p = 0; p < world; ++p) {
    if (!exchanged(p)) continue;
    uint8_t bytes[kRdmaOfferSize];
    read_exact(socket0(p), bytes, sizeof(bytes), deadline, "RDMA offer");
    theirs[p] = parse_rdma_offer(bytes);
    bool accept = false;
    if (rx[p] && !theirs[p].offered) {
      std::fprintf(stderr, "polychip comm: rank %d: rank %d offers no RDMA lane; TCP\n", rank_, p);
    } else if (rx[p]) {
      if (theirs[p].provider != rma_->fabric().provider()) {
        std::fprintf(stderr,
                     "polychip comm: rank %d: rank %d offers RDMA over %s, this rank %s; TCP\n",
                     rank_, p, theirs[p].provider.c_str(), rma_->fabric().provider().c_str());
      } else if (theirs[p].ring.size != options_.rdma_ring_bytes) {
        std::fprintf(stderr, "polychip comm: rank %d: rank %d's RDMA ring differs in size; TCP\n",
                     rank_, p);
      } else {
        try {
          const uint64_t handle = rma_->fabric().add_peer(theirs[p].address);
          tx[p]->connect(handle, theirs[p].ring);
          rx[p]->connect(handle, theirs[p].credit_box);
          accept = true;
        } catch (const Error& e) {
          std::fprintf(stderr, "polychip comm: rank %d: no RDMA lane to rank %d, TCP: %s\n", rank_,
                       p, e.message().c_str());
        }
      }
    }
    std::vector<uint8_t> reply = encode_rdma_reply(accept);
    write_exact(socket0(p), reply.data(), reply.size(), deadline, "RDMA reply");
    taken[p] = accept;
  }
  for (int p = 0; p < world; ++p) {
    if (!exchanged(p)) continue;
    uint8_t bytes[kRdmaReplySize];
    read_exact(socket0(p), bytes, sizeof(bytes), deadline, "RDMA reply");
    const bool their_answer = parse_rdma_reply(bytes);
    if (!taken[p] || !their_answer) continue;
    rma_->attach(p, rx[p].get(), tx[p].get());
    add_lane(p, std::move(rx[p]), std::move(tx[p]), "rdma");
  }
}

std::string Transport::rdma_provider() const {
  for (const std::string& link : link_of_peer_)
    if (link == "rdma") return rma_->fabric().provider();
  return "";
}

bool Transport::uses_shared_memory(int peer) const { return link_of_peer_[peer] == "shm"; }

std::string Transport::link_summary() const {
  if (peers_.size() == 1) return "tcp";
  std::string summary;
  for (const char* kind : {"shm", "rdma", "tcp"}) {
    for (int p = 0; p < world(); ++p) {
      if (p != rank_ && link_of_peer_[p] == kind) {
        summary += (summary.empty() ? "" : "+") + std::string(kind);
        break;
      }
    }
  }
  return summary;
}

template <typename Moot>
bool Transport::progress_lane(Connection& lane, Moot&& moot) {
  try {
    const bool rx = lane.rx->progress();
    const bool tx = lane.tx->progress();
    return rx || tx;
  } catch (const Error& e) {
    // The RDMA provider lost the peer (a write did not land), often before
    // its TCP connection says so: reported as that peer's loss, named,
    // after the other connections are read for an abort that says why.
    if (e.code() != StatusCode::kUnavailable) throw;
    if (moot()) return false;
    fail_lost_peer(lane, e.message());
  }
}

void Transport::drain_lanes() {
  // A peer that hung up after the collective had what it needed (else its
  // failure is its own to report): its lane's unfinished writes are moot.
  // Its hang-up is seen even behind bytes this rank did not read (placement
  // offers for a collective it will not run).
  auto hung_up = [](const Connection& tcp) {
    if (tcp.closed || !tcp.fd.valid()) return true;
    pollfd p{tcp.fd.get(), POLLRDHUP, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  };
  for (;;) {
    bool drained = true;
    for (const auto& lane : lanes_) {
      // A write that did not land because the peer left is moot here too.
      progress_lane(*lane, [&] { return hung_up(*lane->doorbell); });
      const bool done = lane->rx->drained() && lane->tx->drained();
      drained = drained && (done || hung_up(*lane->doorbell));
    }
    if (drained) return;
    if (deadline_.expired()) {
      throw_error(StatusCode::kDeadlineExceeded,
                  "timed out handing the last bytes of a collective to the RDMA provider");
    }
    std::this_thread::yield();
  }
}

ssize_t Transport::receive_bytes(Connection& c, void* data, size_t size) {
  if (!c.rx) return c.inbox.receive(c.fd.get(), data, size);
  uint64_t n = c.rx->read(data, size);
  if (n == 0) {
    errno = EAGAIN;
    return -1;
  }
  lane_bytes_moved_ += n;
  if (c.rx->take_writer_waiting()) ring_doorbell(c);
  return static_cast<ssize_t>(n);
}

bool Transport::reduce_from_ring(Connection& c, Task& t) {
  if (c.got != c.reduced) return false;  // a split element waits in scratch
  const uint8_t* src;
  uint64_t ready = c.rx->peek(&src);
  uint64_t n = std::min({ready, t.bytes - c.got, kReducePiece});
  n -= n % t.element_size;
  if (n == 0 || reinterpret_cast<uintptr_t>(src) % t.element_size != 0) return false;
  if (c.frame.flags & kFlagPayloadCrc) c.crc = crc32c_extend(c.crc, src, n);
  t.reduce(t.data + c.got, src, t.local + c.got, n / t.element_size);
  c.rx->consume(n);
  c.got += n;
  c.reduced = c.got;
  lane_bytes_moved_ += n;
  if (c.rx->take_writer_waiting()) ring_doorbell(c);
  return true;
}

void Transport::ring_doorbell(Connection& lane) {
  Connection& tcp = *lane.doorbell;
  if (tcp.closed || !tcp.fd.valid()) return;  // its loss is reported by the read side
  FrameHeader h;
  h.kind = FrameKind::kDoorbell;
  send_control(tcp, h);
}

void Transport::send_control(Connection& c, FrameHeader h, std::span<const uint8_t> payload) {
  h.source_rank = static_cast<uint32_t>(rank_);
  h.payload_bytes = payload.size();
  uint8_t header[kFrameHeaderSize];
  encode_frame_header(h, header);
  c.control_out.append(reinterpret_cast<const char*>(header), kFrameHeaderSize);
  c.control_out.append(reinterpret_cast<const char*>(payload.data()), payload.size());
  flush_control(c);
}

void Transport::flush_control(Connection& c) {
  // Only between frames: a doorbell must not split a data frame.
  while (c.send_task < 0 && !c.control_out.empty()) {
    ssize_t n =
        ::send(c.fd.get(), c.control_out.data(), c.control_out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      c.control_out.clear();  // the connection is gone; reading it reports why
      return;
    }
    c.control_out.erase(0, static_cast<size_t>(n));
  }
}

bool Transport::pump_lanes() {
  const uint64_t before = lane_bytes_moved_;
  bool progressed = false;
  for (const auto& lane : lanes_) {
    progressed = progress_lane(*lane, [] { return false; }) || progressed;
    complete_lent_sends(*lane);
    if (!lane->parked) handle_readable(*lane);
    if ((lane->send_task >= 0 || !lane->queue.empty()) && !lane->writing) {
      handle_writable(*lane);
    }
  }
  return lane_bytes_moved_ != before || progressed;
}

template <typename Look>
bool Transport::spin(Look&& look) {
  // The clock is read every kLooksPerClockRead looks only (a read costs
  // about as much as a look), the first time after as many: most answers
  // from a peer on another core come before it.
  Clock::time_point pause_until{}, until{};
  bool yielding = spin_yields_;
  for (unsigned looks = 1;; ++looks) {
    // With the peer running on another core its bytes land within a
    // microsecond or two: the first looks only pause (a sched_yield() per
    // look would add a syscall to every answer). After kPausedMicros, and
    // every look of ranks that share cores, yield: the peer waited for may
    // be descheduled (by this job or another) and need the core.
    if (yielding) {
      std::this_thread::yield();
    } else {
      cpu_relax();
    }
    if (look()) return true;
    if (looks % kLooksPerClockRead == 0) {
      const Clock::time_point now = Clock::now();
      if (looks == kLooksPerClockRead) {
        pause_until = now + std::chrono::microseconds(kPausedMicros);
        until = now + std::chrono::microseconds(kSpinMicros);
      }
      if (now >= until || abort_requested_) return false;
      yielding = yielding || now >= pause_until;
    }
  }
}

bool Transport::arm_lanes() {
  // Nothing moved on any lane: one that still waits for bytes from a peer
  // whose connection closed waits for bytes that cannot come. Every lane is
  // looked at before any is armed (an arm that finds work ends the turn).
  for (const auto& lane : lanes_) {
    const bool reading = (lane->pending_receives > 0 && !lane->parked) || lane->mail_to_take;
    const bool writing = lane->send_task >= 0 || !lane->queue.empty() ||
                         !lane->lent_sends.empty() || lane->mail_to_post;
    if ((reading || writing || progress_pending_) && lane->doorbell->closed) {
      fail_lost_peer(*lane, "the peer closed its connection with " +
                                std::to_string(lane->pending_receives) +
                                " frames still expected (did it exit, crash or abort?)");
    }
  }
  for (const auto& lane : lanes_) {
    const bool reading = lane->pending_receives > 0 && !lane->parked;
    const bool writing = lane->send_task >= 0 || !lane->queue.empty();
    if (reading && !lane->rx->arm_reader()) return false;
    if (!lane->lent_sends.empty()) return false;  // only progress completes the loan
    if (writing && !lane->tx->arm_writer()) return false;
    if (lane->mail_to_take && !lane->mail_in->arm_mail_reader(mail_seq_)) return false;
    if (lane->mail_to_post && !lane->mail_out->arm_mail_writer(mail_seq_)) return false;
  }
  return true;
}

bool Transport::exchange_mail(const MailExchange& x) {
  bool moved = false;
  for (const auto& lane_owner : lanes_) {
    Connection& lane = *lane_owner;
    if (lane.mail_to_post &&
        lane.mail_out->post_mail(x.seq, x.message, x.message_bytes,
                                 lane.mail_posted[x.seq % 2] < lane.mail_peer_entered)) {
      lane.mail_posted[x.seq % 2] = x.seq + 1;
      lane.mail_to_post = false;
      --mail_left_;
      moved = true;
      if (lane.tx->take_reader_waiting()) ring_doorbell(lane);
    }
    if (!lane.mail_to_take) continue;
    uint8_t got[kShmMailBytes];
    const int64_t got_bytes = lane.mail_in->take_mail(x.seq, got);
    if (got_bytes < 0) continue;
    lane.mail_to_take = false;
    --mail_left_;
    moved = true;
    if (lane.rx->take_writer_waiting()) ring_doorbell(lane);
    lane.mail_peer_entered = x.seq + 1;
    newest_collective_seen_[lane.peer] = std::max(newest_collective_seen_[lane.peer], x.seq + 1);
    CallSignature theirs;
    if (static_cast<uint64_t>(got_bytes) >= sizeof(theirs)) {
      std::memcpy(&theirs, got, sizeof(theirs));
      if (!(theirs == plan_->call())) fail_signature_mismatch(lane, x.seq, theirs);
    }
    if (static_cast<uint64_t>(got_bytes) != x.message_bytes) {
      fail_on(lane, StatusCode::kDataCorruption,
              "a mailbox message of " + std::to_string(got_bytes) + " bytes, expected " +
                  std::to_string(x.message_bytes));
    }
    std::memcpy(x.gathered + lane.peer * x.bytes, got + sizeof(CallSignature), x.bytes);
  }
  return moved;
}

void Transport::run_with_mailboxes(Plan& plan, const void* mine, uint64_t bytes,
                                   uint8_t* gathered) {
  if (bytes > kMailboxBlockBytes) {
    throw_error(StatusCode::kInternal, "a mailbox block of " + std::to_string(bytes) +
                                           " bytes exceeds " + std::to_string(kMailboxBlockBytes));
  }
  MailExchange x;
  x.seq = plan.seq();
  x.bytes = bytes;
  x.gathered = gathered;
  x.message_bytes = sizeof(CallSignature) + bytes;
  const CallSignature call = plan.call();
  std::memcpy(x.message, &call, sizeof(call));
  std::memcpy(x.message + sizeof(call), mine, bytes);
  enter(plan);
  mail_seq_ = x.seq;
  mail_left_ = 0;
  for (const auto& lane : lanes_) {
    if (!lane->mail_in) continue;
    lane->mail_to_post = lane->mail_to_take = true;
    mail_left_ += 2;
  }
  // An abort() that came while the last call spun is run()'s to raise (a
  // spin that ends within kLooksPerClockRead looks does not look at it).
  if (plan.empty() && !abort_requested_) {
    // Peers on other cores answer within a microsecond or two: no plan,
    // no poll(), unless they are late. The mail is posted before the spin's
    // first pause (a PAUSE is tens of cycles on recent cores).
    auto exchange = [&] {
      exchange_mail(x);
      return mail_left_ == 0;
    };
    try {
      if (exchange() || spin(exchange)) {
        leave();
        return;
      }
    } catch (const Error& e) {
      fail_run(e);
    }
  }
  plan.set_progress(
      [&](bool* moved) {
        *moved = exchange_mail(x);
        return mail_left_ == 0;
      },
      /*announced_by_doorbell=*/true);
  run(plan);
}

Transport::Connection& Transport::connection_for(const Task& t) {
  if (Connection* lane = lane_of_peer_[t.peer]) return *lane;
  auto& list = connections_[t.peer];
  return *list[t.chunk % list.size()];
}

void Transport::fail_on(Connection& c, StatusCode code, const std::string& why) {
  std::string what = plan_ ? std::string(plan_->name()) + " #" + std::to_string(plan_->seq())
                           : std::string("communicator");
  std::string link = !c.rx                            ? "socket " + std::to_string(c.index)
                     : link_of_peer_[c.peer] == "shm" ? std::string("shared memory")
                                                      : std::string("RDMA lane");
  throw_error(code, what + ": " + why + " [" + describe_peer(c.peer) + ", " + link + "]");
}

void Transport::fail_signature_mismatch(Connection& c, uint64_t seq, const CallSignature& theirs) {
  fail_on(c, StatusCode::kFailedPrecondition,
          "collective #" + std::to_string(seq) + ": rank " + std::to_string(c.peer) + " called " +
              describe_call(theirs) + " while rank " + std::to_string(rank_) + " called " +
              describe_call(plan_->call()) +
              " (signature mismatch: every rank must make the same collective calls, with the "
              "same arguments, in the same order)");
}

void Transport::fail_lost_peer(Connection& c, const std::string& why) {
  if (!scanning_lost_peer_) {
    scanning_lost_peer_ = true;
    // Any peer may hold the reason (an abort travels from its origin to
    // every rank, and a neighbour may exit before this rank reads it). A
    // peer that gives up in the middle of a frame cannot put its reason on
    // that socket, and a rank that learns of a failure from a neighbour
    // writes its abort frames a moment later: wait briefly for one on the
    // other sockets before settling for "connection closed".
    std::vector<Connection*> open;
    for (Connection* other : all_connections_) {
      if (!other->closed && other != &c && !other->rx && other->fd.valid()) open.push_back(other);
    }
    const Deadline grace(kLostPeerGraceSeconds);
    std::vector<pollfd> fds;
    // The first look reads every socket: bytes read ahead into an inbox
    // make no socket readable.
    for (bool first = true; !open.empty() && !grace.expired(); first = false) {
      fds.clear();
      for (Connection* other : open)
        fds.push_back({other->fd.get(), POLLIN, static_cast<short>(first ? POLLIN : 0)});
      if (!first && ::poll(fds.data(), fds.size(), grace.remaining_ms()) < 0 && errno != EINTR) {
        break;
      }
      std::vector<Connection*> still_open;
      for (size_t i = 0; i < open.size(); ++i) {
        Connection* other = open[i];
        if (fds[i].revents == 0) {
          still_open.push_back(other);
          continue;
        }
        try {
          handle_readable(*other);
        } catch (const Error& e) {
          if (e.code() == StatusCode::kAborted || e.code() == StatusCode::kDataCorruption) {
            scanning_lost_peer_ = false;
            throw;
          }
          continue;  // lost too: nothing more comes from it
        }
        if (!other->closed && !other->parked) still_open.push_back(other);
      }
      open.swap(still_open);
    }
    scanning_lost_peer_ = false;
  }
  fail_on(c, StatusCode::kUnavailable, why);
}

void Transport::offer_placements(Plan& plan) {
  offered_.assign(plan.tasks().size(), 0);
  placed_bytes_ = 0;
  if (!options_.rdma_placement || !rma_ || plan.kind() != FrameKind::kCollective ||
      plan.waits_before_access())
    return;
  std::map<int, std::vector<PlacementOffer>> offers;  // by peer
  for (size_t i = 0; i < plan.tasks().size(); ++i) {
    const Task& t = plan.tasks()[i];
    if (t.is_send || t.reduce || t.bytes < kRmaLendMinBytes) continue;
    Connection& link = connection_for(t);
    if (!link.rma_rx) continue;
    const RemoteRegion region = rma_->fabric().register_memory(t.data, t.bytes);
    offered_[i] = 1;
    link.rma_rx->allow_placed(t.bytes);
    offers[t.peer].push_back({t.step, t.chunk, region});
  }
  for (const auto& [peer, list] : offers) {
    for (size_t first = 0; first < list.size(); first += kMaxPlacementOffers) {
      const size_t n = std::min(kMaxPlacementOffers, list.size() - first);
      FrameHeader h;
      h.kind = FrameKind::kPlacement;
      h.seq = plan.seq();
      send_control(*lane_of_peer_[peer]->doorbell, h,
                   encode_placement_offers(std::span(list).subspan(first, n)));
    }
  }
}

void Transport::take_placement_offers(Connection& c) {
  Connection* lane = lane_of_peer_[c.peer];
  if (!lane || !lane->rma_tx) {
    fail_on(c, StatusCode::kDataCorruption,
            "placement offers from a peer this rank has no RDMA lane to");
  }
  std::vector<PlacementOffer> offers;
  try {
    offers = parse_placement_offers(
        {reinterpret_cast<const uint8_t*>(c.control_payload.data()), c.control_payload.size()});
  } catch (const Error& e) {
    fail_on(c, e.code(), "rejected placement offers: " + e.message());
  }
  // Offers of a collective this rank has left are of no use any more.
  const bool in_collective = plan_ && plan_->kind() == FrameKind::kCollective;
  const uint64_t current = in_collective ? plan_->seq() : next_collective_seq_;
  if (c.frame.seq < current || !options_.rdma_placement) return;
  for (const PlacementOffer& o : offers) {
    placements_[Key{c.peer, FrameKind::kCollective, c.frame.seq, o.step, o.chunk}] = o.region;
  }
}

bool Transport::take_placement(const Task& t, RemoteRegion* to) {
  if (placements_.empty() || t.kind != FrameKind::kCollective) return false;
  const auto found = placements_.find(Key{t.peer, t.kind, t.seq, t.step, t.chunk});
  if (found == placements_.end()) return false;
  const RemoteRegion region = found->second;
  placements_.erase(found);
  if (region.size != t.bytes) return false;  // the frame checks will say what is wrong
  *to = region;
  return true;
}

void Transport::withdraw_placements() {
  for (size_t i = 0; i < offered_.size(); ++i) {
    const Task& t = plan_->tasks()[i];
    if (offered_[i]) rma_->fabric().deregister_memory(t.data, t.bytes);
  }
  offered_.clear();
  if (plan_ && plan_->kind() == FrameKind::kCollective && !placements_.empty()) {
    std::erase_if(placements_, [seq = plan_->seq()](const auto& p) { return p.first.seq <= seq; });
  }
}

void Transport::enqueue_send(int task) {
  Connection& c = connection_for(plan_->tasks()[task]);
  c.queue.push_back(task);
  if (!c.writing) handle_writable(c);
}

void Transport::complete(int task) {
  Task& t = plan_->tasks()[task];
  t.done = true;
  --remaining_;
  if (t.on_complete) t.on_complete();
  for (int d : t.dependents) {
    Task& dep = plan_->tasks()[d];
    if (--dep.unmet == 0 && dep.is_send) enqueue_send(d);
  }
}

void Transport::handle_writable(Connection& c) {
  c.writing = true;
  while (true) {
    if (c.send_task < 0) {
      flush_control(c);
      if (!c.control_out.empty() || c.queue.empty()) break;
      c.send_task = c.queue.front();
      c.queue.pop_front();
      const Task& t = plan_->tasks()[c.send_task];
      plan_->before_access(t.data, t.bytes);
      FrameHeader h;
      h.kind = t.kind;
      h.seq = t.seq;
      h.step = t.step;
      h.chunk = t.chunk;
      h.payload_bytes = t.bytes;
      h.source_rank = static_cast<uint32_t>(rank_);
      if (t.kind == FrameKind::kCollective) h.call = plan_->call();
      if (options_.checksum) {
        h.flags = kFlagPayloadCrc;
        h.payload_crc = crc32c(t.data, t.bytes);
      }
      c.send_placed = c.rma_tx && take_placement(t, &c.send_to);
      if (c.send_placed) h.flags |= kFlagPlaced;
      encode_frame_header(h, c.send_header);
      c.sent = 0;
    }
    const Task& t = plan_->tasks()[c.send_task];
    iovec iov[2];
    int n_iov = 0;
    if (c.sent < kFrameHeaderSize) {
      iov[n_iov++] = {c.send_header + c.sent, kFrameHeaderSize - c.sent};
      if (t.bytes > 0 && !c.send_placed) iov[n_iov++] = {t.data, t.bytes};
    } else {
      uint64_t off = c.sent - kFrameHeaderSize;
      iov[n_iov++] = {t.data + off, t.bytes - off};
    }
    ssize_t n;
    if (c.tx) {
      uint64_t written = 0;
      for (int i = 0; i < n_iov; ++i) {
        // The header (iov[0] while it is unsent) is rewritten for the next
        // frame: only payloads are lent.
        const bool payload = i > 0 || c.sent >= kFrameHeaderSize;
        uint64_t w = payload ? c.tx->lend(iov[i].iov_base, iov[i].iov_len)
                             : c.tx->write(iov[i].iov_base, iov[i].iov_len);
        written += w;
        if (w < iov[i].iov_len) break;
      }
      if (written == 0) break;  // ring full: the receiver rings when it frees space
      lane_bytes_moved_ += written;
      c.tx_taken += written;
      if (c.send_placed && c.sent + written == kFrameHeaderSize) {
        // The header is in the ring: the payload goes to its placement.
        c.rma_tx->place(t.data, t.bytes, c.send_to);
        c.tx_placed += t.bytes;
        written += t.bytes;
      }
      if (c.tx->take_reader_waiting()) ring_doorbell(c);
      n = static_cast<ssize_t>(written);
    } else {
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = n_iov;
      n = ::sendmsg(c.fd.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      int err = errno;
      c.writing = false;
      fail_lost_peer(c, std::string("sending failed (") + std::strerror(err) +
                            "): the peer closed its connection (did it exit, crash or abort?)");
    }
    c.sent += static_cast<uint64_t>(n);
    if (c.sent == kFrameHeaderSize + t.bytes) {
      int done = c.send_task;
      c.send_task = -1;
      // With nothing lent in use (always, on shared memory) the ring holds
      // no byte of this send any more.
      if (c.tx && (!c.lent_sends.empty() || c.tx->lent_in_use() > 0 || c.send_placed)) {
        c.lent_sends.push_back({done, c.tx_taken, c.tx_placed});
        c.send_placed = false;
        complete_lent_sends(c);
      } else {
        complete(done);
      }
    }
  }
  c.writing = false;
}

void Transport::complete_lent_sends(Connection& lane) {
  if (lane.lent_sends.empty()) return;
  const uint64_t let_go = lane.tx_taken - lane.tx->lent_in_use();
  const uint64_t placed = lane.rma_tx ? lane.rma_tx->placed_written() : 0;
  while (!lane.lent_sends.empty() && lane.lent_sends.front().stream_end <= let_go &&
         lane.lent_sends.front().placed_end <= placed) {
    const int done = lane.lent_sends.front().task;
    lane.lent_sends.pop_front();
    complete(done);
  }
}

bool Transport::start_frame(Connection& c) {
  const FrameHeader& f = c.frame;
  if (f.kind == FrameKind::kDoorbell) return true;  // the loop looks at the rings anyway
  if (f.kind == FrameKind::kStatus) {               // a peer timed out and asks where we wait
    WaitState& w = peer_waits_[c.peer];
    w.answered = true;
    w.in = static_cast<WaitingIn>(f.step);
    w.seq = f.seq;
    w.call = f.call;
    if (!status_sent_[c.peer]) send_status(c.peer);
    return true;
  }
  if (f.kind == FrameKind::kPlacement) {
    c.reading_placements = true;
    c.control_payload.clear();
    return true;
  }
  if (f.kind == FrameKind::kAbort) {
    c.reading_abort = true;
    c.control_payload.clear();
    if (f.payload_bytes == 0) fail_on(c, StatusCode::kAborted, "the peer aborted");
    return true;
  }
  if (f.kind == FrameKind::kCollective)
    newest_collective_seen_[c.peer] = std::max(newest_collective_seen_[c.peer], f.seq + 1);
  if (f.kind == FrameKind::kCollective && plan_->kind() == FrameKind::kCollective &&
      f.seq == plan_->seq() && !(f.call == plan_->call())) {
    fail_signature_mismatch(c, f.seq, f.call);
  }
  Key key{c.peer, f.kind, f.seq, f.step, f.chunk};
  auto it = receives_.find(key);
  if (it == receives_.end()) {
    bool future = (f.kind == FrameKind::kCollective && f.seq >= next_collective_seq_) ||
                  (f.kind == FrameKind::kPointToPoint && f.seq >= next_recv_seq_[c.peer]);
    if (future) {
      c.parked = true;
      return false;
    }
    fail_on(c, StatusCode::kDataCorruption,
            "unexpected frame (kind " + std::to_string(int(f.kind)) + ", seq " +
                std::to_string(f.seq) + ", step " + std::to_string(f.step) + ", chunk " +
                std::to_string(f.chunk) +
                "): duplicate, stale, or the ranks called different collectives / used "
                "different POLYCHIP_COMM_ALGO or POLYCHIP_COMM_CHECKSUM settings");
  }
  int task = it->second;
  receives_.erase(it);
  Task& t = plan_->tasks()[task];
  if (&connection_for(t) != &c) {
    fail_on(c, StatusCode::kDataCorruption, "frame arrived on the wrong socket");
  }
  if (f.payload_bytes != t.bytes) {
    fail_on(c, StatusCode::kDataCorruption,
            "frame carries " + std::to_string(f.payload_bytes) + " bytes, expected " +
                std::to_string(t.bytes) + " (ranks passed different counts?)");
  }
  if (options_.checksum && !(f.flags & kFlagPayloadCrc)) {
    fail_on(c, StatusCode::kFailedPrecondition,
            "POLYCHIP_COMM_CHECKSUM=1 here but the peer sends no checksums");
  }
  if (f.flags & kFlagPlaced) {
    if (!c.rma_rx || !offered_[task]) {
      fail_on(c, StatusCode::kDataCorruption,
              "a frame says its payload was placed (step " + std::to_string(f.step) + ", chunk " +
                  std::to_string(f.chunk) + "), but this rank offered no buffer for it");
    }
    c.placed = true;
    c.placed_until = c.placed_taken + t.bytes;
  }
  plan_->before_access(t.data, t.bytes);
  if (t.local) plan_->before_access(t.local, t.bytes);
  c.receive_task = task;
  c.got = 0;
  c.reduced = 0;
  c.crc = 0;
  if (t.reduce && c.scratch.size() < t.bytes) c.scratch.resize(t.bytes);
  if (t.bytes == 0) finish_receive(c);
  return true;
}

void Transport::finish_receive(Connection& c) {
  Task& t = plan_->tasks()[c.receive_task];
  if ((c.frame.flags & kFlagPayloadCrc) && c.crc != c.frame.payload_crc) {
    fail_on(c, StatusCode::kDataCorruption,
            "payload CRC32C mismatch (step " + std::to_string(t.step) + ", chunk " +
                std::to_string(t.chunk) + "): data corrupted in transit");
  }
  int task = c.receive_task;
  c.receive_task = -1;
  --c.pending_receives;
  complete(task);
}

void Transport::handle_readable(Connection& c) {
  c.inbox.new_pass();
  for (int iteration = 0; iteration < 64; ++iteration) {
    if (c.parked || c.closed) return;
    if (c.receive_task < 0 && !c.reading_abort && !c.reading_placements) {
      ssize_t n = receive_bytes(c, c.header + c.header_got, kFrameHeaderSize - c.header_got);
      if (n == 0) {
        // Only this socket's own frames count: the peer's other sockets, or
        // its shared-memory ring, may still hold frames sent before it closed
        // (the ring's lane reports a loss when it waits for bytes that cannot come).
        // A plan's progress work (the GDR ring) needs every peer until done.
        const bool busy = c.pending_receives > 0 || c.header_got > 0 || c.send_task >= 0 ||
                          !c.queue.empty() || progress_pending_;
        if (busy) {
          fail_lost_peer(c, "the peer closed its connection with " +
                                std::to_string(c.pending_receives) +
                                " frames still expected (did it exit, crash or abort?)");
        }
        c.closed = true;
        return;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        fail_lost_peer(c, std::string("receive failed: ") + std::strerror(errno) +
                              " (did the peer exit or crash?)");
      }
      c.header_got += static_cast<size_t>(n);
      if (c.header_got < kFrameHeaderSize) continue;
      c.header_got = 0;
      try {
        c.frame = parse_frame_header({c.header, kFrameHeaderSize}, static_cast<uint32_t>(c.peer));
      } catch (const Error& e) {
        fail_on(c, e.code(), "rejected a malformed frame: " + e.message());
      }
      if (!start_frame(c)) return;
      continue;
    }
    if (c.reading_abort || c.reading_placements) {
      char buf[4096];
      size_t want = c.frame.payload_bytes - c.control_payload.size();
      ssize_t n = receive_bytes(c, buf, want);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      if (n > 0) c.control_payload.append(buf, static_cast<size_t>(n));
      const bool whole = c.control_payload.size() == c.frame.payload_bytes;
      if (c.reading_abort && (n <= 0 || whole)) {
        fail_on(c, StatusCode::kAborted, "the peer aborted: " + c.control_payload);
      }
      if (n <= 0) {
        fail_lost_peer(c,
                       "the peer closed its connection in the middle of a frame (did it exit "
                       "or crash?)");
      }
      if (whole) {
        c.reading_placements = false;
        take_placement_offers(c);
      }
      continue;
    }
    Task& t = plan_->tasks()[c.receive_task];
    if (c.placed) {
      // Landed bytes are counted by the lane's progress (pump_lanes).
      if (c.rma_rx->placed_landed() < c.placed_until) return;
      c.placed = false;
      c.placed_taken = c.placed_until;
      if (c.frame.flags & kFlagPayloadCrc) c.crc = crc32c(t.data, t.bytes);
      c.got = t.bytes;
      placed_bytes_ += t.bytes;
      finish_receive(c);
      continue;
    }
    if (t.reduce && c.rx && reduce_from_ring(c, t)) {
      if (c.got == t.bytes) finish_receive(c);
      continue;
    }
    uint64_t left = t.bytes - c.got;
    uint8_t* dst;
    if (t.reduce) {
      left = std::min(left, kReducePiece);
      dst = c.scratch.data() + c.got;
    } else {
      dst = t.data + c.got;
    }
    ssize_t n = receive_bytes(c, dst, left);
    if (n == 0) {
      fail_lost_peer(c,
                     "the peer closed its connection in the middle of a frame (did it exit or "
                     "crash?)");
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      fail_lost_peer(c, std::string("receive failed: ") + std::strerror(errno));
    }
    if (c.frame.flags & kFlagPayloadCrc) c.crc = crc32c_extend(c.crc, dst, size_t(n));
    c.got += static_cast<uint64_t>(n);
    if (t.reduce) {
      uint64_t ready = c.got == t.bytes ? c.got : c.got / t.element_size * t.element_size;
      if (ready > c.reduced) {
        t.reduce(t.data + c.reduced, c.scratch.data() + c.reduced, t.local + c.reduced,
                 (ready - c.reduced) / t.element_size);
        c.reduced = ready;
      }
    }
    if (c.got == t.bytes) finish_receive(c);
  }
}

std::string Transport::pending_summary() const {
  std::map<int, int> receives, sends;
  for (const Task& t : plan_->tasks()) {
    if (t.done) continue;
    (t.is_send ? sends : receives)[t.peer]++;
  }
  // A pair exchanges frames or mail, never both in one call.
  std::set<int> waited_for, mail_expected;
  for (const auto& [peer, n] : receives) waited_for.insert(peer);
  for (const auto& lane : lanes_) {
    if (!lane->mail_to_take) continue;
    waited_for.insert(lane->peer);
    mail_expected.insert(lane->peer);
  }
  std::string s;
  const std::string call = std::string(plan_->name()) + " #" + std::to_string(plan_->seq());
  for (int peer : waited_for) {
    s += "; waiting for " +
         (mail_expected.count(peer) ? std::string("its mailbox message")
                                    : std::to_string(receives[peer]) + " frame(s)") +
         " from " + describe_peer(peer);
    if (plan_->kind() != FrameKind::kCollective) continue;
    // What this rank saw of the peer: the classes of a hang.
    const uint64_t seen = newest_collective_seen_[peer];
    if (seen <= plan_->seq()) {
      s += ": it never entered " + call + " (missing-enter; its newest message here was " +
           (seen == 0 ? std::string("none") : "of collective #" + std::to_string(seen - 1)) + ")";
    } else if (seen == plan_->seq() + 1) {
      s += ": it entered " + call +
           " and stopped sending (missing-exit: stuck in it, or waiting "
           "for another rank)";
    } else {
      s += ": it already left " + call + " for collective #" + std::to_string(seen - 1) +
           " without sending these frames";
    }
  }
  for (auto [peer, n] : sends) {
    s += "; " + std::to_string(n) + " frame(s) to " + describe_peer(peer) + " not sent";
  }
  for (const auto& lane : lanes_) {
    if (lane->mail_to_post)
      s += "; the mailbox to " + describe_peer(lane->peer) + " still holds its previous message";
  }
  return s;
}

WaitState Transport::own_wait_state() const {
  WaitState w;
  w.answered = true;
  if (plan_->kind() == FrameKind::kCollective) {
    w.seq = plan_->seq();
    w.call = plan_->call();
  } else {
    w.in = WaitingIn::kPointToPoint;
  }
  return w;
}

void Transport::send_status(int peer) {
  status_sent_[peer] = true;
  for (const auto& c : connections_[peer]) {
    if (c->closed || !c->fd.valid() || c->send_task >= 0) continue;
    const WaitState w = own_wait_state();
    FrameHeader h;
    h.kind = FrameKind::kStatus;
    h.step = static_cast<uint32_t>(w.in);
    h.seq = w.seq;
    h.call = w.call;
    send_control(*c, h);
    return;
  }
}

bool Transport::hang_view_ready() {
  if (!asking_peers_) {
    asking_peers_ = true;
    for (int p = 0; p < world(); ++p) {
      if (p != rank_ && !status_sent_[p]) send_status(p);
    }
    deadline_ = Deadline(std::min(kAskPeersSeconds, options_.timeout_seconds));
  }
  if (deadline_.expired()) return true;
  for (int p = 0; p < world(); ++p) {
    if (p != rank_ && !peer_waits_[p].answered) return false;
  }
  return true;
}

void Transport::shut_down_connections(const std::string* abort_reason) {
  // Every abort frame is written before any socket is shut down: a peer that
  // sees one of this rank's sockets end mid-frame looks on the others for
  // the reason, and must find it there already.
  for (Connection* c : all_connections_) {
    if (!c->fd.valid() || !abort_reason || c->send_task >= 0 || c->closed) continue;
    // Best effort, at a frame boundary only: tell the peer why.
    std::string reason = abort_reason->substr(0, 4096);
    FrameHeader h;
    h.kind = FrameKind::kAbort;
    h.payload_bytes = reason.size();
    h.source_rank = static_cast<uint32_t>(rank_);
    uint8_t header[kFrameHeaderSize];
    encode_frame_header(h, header);
    iovec iov[2] = {{header, kFrameHeaderSize}, {reason.data(), reason.size()}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    (void)::sendmsg(c->fd.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  for (Connection* c : all_connections_) {
    if (c->fd.valid()) ::shutdown(c->fd.get(), SHUT_RDWR);
  }
}

void Transport::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(abort_mutex_);
  if (abort_requested_) return;
  // The reason first: run() may see the flag at once (it polls it every turn).
  abort_reason_ = "rank " + std::to_string(rank_) + " called abort(): " + reason;
  abort_requested_ = true;
  if (!in_call_) {
    failed_ = true;
    failure_code_ = StatusCode::kAborted;
    failure_ = abort_reason_;
    shut_down_connections(&abort_reason_);
  } else {
    char c = 1;
    (void)!::write(wake_pipe_[1], &c, 1);
  }
}

void Transport::throw_if_failed() {
  if (!failed_) return;
  std::lock_guard<std::mutex> lock(abort_mutex_);
  throw_failure();
}

void Transport::throw_failure() const {
  throw_error(failure_code_, failure_ + " (the communicator failed earlier)");
}

void Transport::enter(Plan& plan) {
  plan_ = &plan;
  // Without the mutex while nothing failed (a lock and unlock per call
  // showed in 8-byte latencies). in_call_ is stored before abort_requested_
  // is read, abort() does the opposite, both sequentially consistent: an
  // abort() that found no call running is seen here, and the mutex then
  // waits for it to have failed the transport.
  in_call_ = true;
  if (!abort_requested_ && !failed_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(abort_mutex_);
  if (failed_) {
    in_call_ = false;
    plan_ = nullptr;
    throw_failure();
  }
  // An abort() that found a call running woke it; run() raises it.
}

void Transport::leave() {
  plan_ = nullptr;
  in_call_.store(false, std::memory_order_release);
}

void Transport::run(Plan& plan) {
  enter(plan);
  std::vector<Task>& tasks = plan.tasks();
  remaining_ = tasks.size();
  receives_.clear();
  peer_waits_.assign(world(), WaitState{});
  status_sent_.assign(world(), false);
  asking_peers_ = false;
  deadline_ = Deadline(options_.timeout_seconds);
  try {
    for (size_t i = 0; i < tasks.size(); ++i) {
      Task& t = tasks[i];
      if (t.peer < 0 || t.peer >= world() || t.peer == rank_) {
        throw_error(StatusCode::kInternal, "plan names invalid peer " + std::to_string(t.peer));
      }
      if (!t.is_send) {
        receives_.emplace(Key{t.peer, t.kind, t.seq, t.step, t.chunk}, static_cast<int>(i));
        connection_for(t).pending_receives++;
        Connection& link = connection_for(t);
        if (link.closed) {
          fail_on(link, StatusCode::kUnavailable,
                  "the peer closed its connection earlier (did it exit?)");
        }
      }
    }
    offer_placements(plan);
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].is_send && tasks[i].unmet == 0) enqueue_send(static_cast<int>(i));
    }
    for (Connection* c : all_connections_) {
      if (c->parked) {
        c->parked = false;
        if (start_frame(*c)) handle_readable(*c);
      }
    }
    std::vector<pollfd>& fds = poll_fds_;
    std::vector<Connection*>& polled = polled_;
    Clock::time_point lanes_moved_at = Clock::now();
    uint64_t plan_bytes = 0;
    for (const Task& t : tasks) plan_bytes += t.bytes;
    const bool spin_sockets = plan_bytes <= kSpinPlanBytes;
    bool progress_done = !plan.has_progress();
    // Mail is owed by (and to) some peers, each lane says which; other
    // progress (the GDR ring) needs every peer until it is done.
    const bool mail = plan.progress_announced_by_doorbell();
    progress_pending_ = !progress_done && !mail;
    Clock::time_point progress_moved_at = Clock::now();
    while (remaining_ > 0 || !progress_done) {
      if (abort_requested_) {
        std::string reason;
        {
          std::lock_guard<std::mutex> lock(abort_mutex_);
          reason = abort_reason_;
        }
        throw_error(StatusCode::kAborted, reason);
      }
      int timeout_ms = deadline_.remaining_ms(1000);
      if (!progress_done) {
        // Like an RDMA lane: nothing wakes poll() when a write lands.
        bool moved = false;
        progress_done = plan.progress(&moved);
        progress_pending_ = !progress_done && !mail;
        if (moved) progress_moved_at = Clock::now();
        if (mail) {
          if (progress_done || moved) timeout_ms = 0;
        } else {
          const bool recent =
              Clock::now() - progress_moved_at < std::chrono::microseconds(kRdmaSpinMicros);
          timeout_ms = std::min(timeout_ms, progress_done || recent ? 0 : 1);
        }
        if (remaining_ == 0 && progress_done) break;
      }
      if (!lanes_.empty()) {
        // Rings have no descriptor: look at them every turn; sleep only
        // with the wake-up flags armed, so a doorbell ends the sleep. Mail
        // (progress a doorbell announces) is looked for with them.
        auto look = [&] {
          bool moved = pump_lanes();
          if (!progress_done && mail) {
            bool mail_moved = false;
            progress_done = plan.progress(&mail_moved);
            progress_pending_ = !progress_done && !mail;
            moved = moved || mail_moved;
          }
          return moved;
        };
        if (look() || spin(look)) {
          timeout_ms = 0;
          lanes_moved_at = Clock::now();
        } else if (!arm_lanes()) {
          timeout_ms = 0;
        }
        if (remaining_ == 0 && progress_done) break;
        // RDMA lanes land bytes only while this rank progresses them.
        if (!lanes_wake_by_doorbell_) {
          const bool recent =
              Clock::now() - lanes_moved_at < std::chrono::microseconds(kRdmaSpinMicros);
          timeout_ms = std::min(timeout_ms, recent ? 0 : 1);
        }
      }
      fds.clear();
      polled.clear();
      fds.push_back({wake_pipe_[0], POLLIN, 0});
      // Bytes already read into an inbox are no poll() event: read them now.
      auto buffered = [](const Connection& c) { return !c.parked && c.inbox.holds_bytes(); };
      bool any_buffered = false;
      for (Connection* c : all_connections_) {
        if (c->closed || c->rx) continue;
        any_buffered = any_buffered || buffered(*c);
        // A parked connection holds a later plan's frame: it is not read
        // now, but while progress work needs every peer its hang-up counts.
        short events = c->parked ? (progress_pending_ ? POLLRDHUP : 0) : POLLIN;
        if (c->send_task >= 0 || !c->queue.empty() || !c->control_out.empty()) events |= POLLOUT;
        fds.push_back({c->fd.get(), events, 0});
        polled.push_back(c);
      }
      if (any_buffered) timeout_ms = 0;
      int rc = ::poll(fds.data(), fds.size(), 0);
      if (rc == 0 && timeout_ms > 0 && spin_sockets) {
        // A small plan's sockets too are polled for a while before sleeping:
        // a small frame from a peer on another core arrives within
        // microseconds, and waking from a blocking poll() costs more than
        // that. (A big plan's waits are for the kernel to move bytes, which
        // spinning beside it only slows.)
        spin([&] {
          rc = ::poll(fds.data(), fds.size(), 0);
          return rc != 0;
        });
        if (rc == 0) rc = ::poll(fds.data(), fds.size(), timeout_ms);
      }
      if (rc < 0 && errno != EINTR) {
        throw_error(StatusCode::kInternal, std::string("poll: ") + std::strerror(errno));
      }
      if (rc > 0 || any_buffered) {
        // Drain receives first: it frees the senders and feeds our next sends.
        for (size_t i = 1; i < fds.size(); ++i) {
          if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLRDHUP)) ||
              buffered(*polled[i - 1])) {
            Connection& c = *polled[i - 1];
            if (c.parked && progress_pending_ && (fds[i].revents & (POLLRDHUP | POLLHUP)))
              fail_lost_peer(c,
                             "the peer closed its connection in the middle of a collective "
                             "(did it exit, crash or abort?)");
            if (c.parked && !(fds[i].revents & POLLIN)) continue;
            handle_readable(c);
          }
        }
        for (size_t i = 1; i < fds.size(); ++i) {
          if ((fds[i].revents & POLLOUT) && !polled[i - 1]->writing)
            handle_writable(*polled[i - 1]);
        }
      }
      if ((remaining_ > 0 || !progress_done) && (asking_peers_ || deadline_.expired()) &&
          hang_view_ready()) {
        std::vector<WaitState> waits = peer_waits_;
        waits[rank_] = own_wait_state();
        const HangView view =
            classify_hang(rank_, waits, std::min(kAskPeersSeconds, options_.timeout_seconds));
        std::fprintf(stderr, "%s\n", view.json.c_str());
        throw_error(StatusCode::kDeadlineExceeded,
                    std::string(plan.name()) + " #" + std::to_string(plan.seq()) +
                        ": timed out after " + fmt::format("{:g}", options_.timeout_seconds) +
                        " s (POLYCHIP_COMM_TIMEOUT)" + pending_summary() + view.text);
      }
    }
    drain_lanes();
    withdraw_placements();
  } catch (const Error& e) {
    fail_run(e);
  }
  leave();
}

void Transport::fail_run(const Error& e) {
  progress_pending_ = false;
  withdraw_placements();
  std::lock_guard<std::mutex> lock(abort_mutex_);
  failed_ = true;
  failure_code_ = e.code();
  failure_ = e.message();
  std::string reason = "rank " + std::to_string(rank_) + " failed: " + e.message();
  shut_down_connections(&reason);
  plan_ = nullptr;
  in_call_ = false;
  throw;  // called in a handler: rethrows the error as caught
}

}  // namespace polychip::comm
