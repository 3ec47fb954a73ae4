// polychip's transport: a full mesh of authenticated TCP sockets (several
// per peer) and one poll()-driven event loop that runs a Plan on the calling
// thread. A peer may instead be reached over a lane, a pair of byte rings:
// shared memory (same host) or RDMA (one-sided writes through libfabric
// into registered host memory, the H2D-RDMA path). A lane's peer keeps its
// TCP connection for doorbells, aborts and liveness. Every connection is
// watched during every operation, so a peer that dies or closes is noticed
// at once; a peer that hangs hits the deadline.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "algorithms/plan.hpp"
#include "polychip/error.hpp"
#include "security/handshake.hpp"
#include "transport/hang_report.hpp"
#include "transport/shm/shm_ring.hpp"
#include "transport/tcp/socket.hpp"

namespace polychip::comm {

class ByteRing;
class RmaEndpoint;

struct TransportOptions {
  double timeout_seconds = 300;
  bool checksum = false;
  int sockets_per_peer = 2;
  bool shared_memory = true;             // offer shared-memory links to same-host peers
  uint64_t shm_ring_bytes = 4ull << 20;  // per direction and peer (a power of two)
  // RDMA lanes: to no peer, to peers on other hosts when a NIC provider
  // (verbs, efa, cxi) opens, or to every peer without a shared-memory lane
  // (any provider, tcp;ofi_rxm and shm included). A lane that cannot be set
  // up leaves its peer on TCP, with the reason on stderr.
  enum class Rdma { kOff, kAcrossHosts, kEveryPeer };
  Rdma rdma = Rdma::kOff;
  std::string net_provider;  // empty: POLYCHIP_NET_PROVIDER, else the preferred list
  uint64_t rdma_ring_bytes = 4ull << 20;
  // Offer the destinations of collective frames that are not reduced to RDMA
  // peers, which then write those payloads there instead of into the ring.
  bool rdma_placement = true;
  // Raised when set-up must stop waiting (a rank left the rendezvous).
  std::shared_ptr<const std::atomic<bool>> setup_cancelled;
};

class Transport {
 public:
  // Builds the mesh: connects to lower ranks, accepts higher ones on
  // `listener`; connections that fail the handshake are dropped and counted.
  Transport(int rank, std::vector<PeerInfo> peers, Fd listener, const Credentials& credentials,
            TransportOptions options);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Runs `plan` to completion; throws (and marks the transport failed,
  // closing every connection so peers fail fast) on any error.
  void run(Plan& plan);
  // Thread-safe: makes a running or future run() throw ABORTED and tells
  // the peers why.
  void abort(const std::string& reason);
  // Throws the failure that ended this transport (an abort() included), if
  // any: a single rank's calls, which never run a plan, check it instead.
  void throw_if_failed();

  uint64_t next_collective_seq() { return next_collective_seq_++; }
  uint64_t next_send_seq(int peer) { return next_send_seq_[peer]++; }
  uint64_t next_recv_seq(int peer) { return next_recv_seq_[peer]++; }

  int rank() const { return rank_; }
  int world() const { return static_cast<int>(peers_.size()); }
  const PeerInfo& peer(int r) const { return peers_[r]; }
  const TransportOptions& options() const { return options_; }
  int refused_connections() const { return refused_connections_; }
  std::string describe_peer(int r) const;
  bool uses_shared_memory(int peer) const;
  // What carries frames to `peer`: "shm", "rdma" or "tcp".
  const std::string& link_to(int peer) const { return link_of_peer_[peer]; }
  // Payload bytes of the last plan run that peers placed straight into
  // this rank's buffers (RDMA lanes; none was copied out of a ring).
  uint64_t placed_bytes() const { return placed_bytes_; }
  // What carries this rank's frames: "tcp", "shm", "rdma" or a '+'-joined
  // mix ("shm+tcp") in that order.
  std::string link_summary() const;
  // The RDMA provider of this rank's lanes, empty without any.
  std::string rdma_provider() const;

  // Shared-memory mailboxes (shm_ring.hpp): by rank, whether that peer has
  // one (its link is shared memory); the largest block one carries.
  static constexpr uint64_t kMailboxBlockBytes = kShmMailBytes - sizeof(CallSignature);
  const std::vector<bool>& mailbox_peers() const { return mailbox_peers_; }
  bool has_mailboxes() const { return mailbox_count_ > 0; }
  // Runs `plan` (frames to the peers without a mailbox; may be empty) and
  // exchanges `bytes` (at most kMailboxBlockBytes) with every peer that has
  // a mailbox: `mine` to each, each one's into `gathered` at peer * bytes,
  // under the plan's sequence number and call (a peer's other call fails at
  // once, naming both). With only mail to move and the peers on time no
  // plan runs: a few stores and loads per peer. Waits, fails and times out
  // as run() does.
  void run_with_mailboxes(Plan& plan, const void* mine, uint64_t bytes, uint8_t* gathered);

 private:
  struct Connection;
  struct Key {
    int peer;
    FrameKind kind;
    uint64_t seq;
    uint32_t step;
    uint32_t chunk;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };

  struct MailExchange {
    uint64_t seq = 0;
    uint8_t message[kShmMailBytes];  // the call's signature, then the block
    uint64_t message_bytes = 0;
    uint64_t bytes = 0;  // of the block
    uint8_t* gathered = nullptr;
  };

  void connect_mesh(Fd listener, const Credentials& credentials);
  // Negotiates shared-memory links on socket 0 of every peer (wire.hpp).
  void setup_shared_memory(const Deadline& deadline);
  // Then RDMA lanes to the peers left on TCP, likewise.
  void setup_rdma(const Deadline& deadline);
  std::unique_ptr<RmaEndpoint> open_rdma_endpoint(std::string* why_not) const;
  void add_lane(int peer, std::unique_ptr<ByteRing> rx, std::unique_ptr<ByteRing> tx,
                const char* kind);
  // Progresses every lane until nothing staged or owed is left (RDMA lanes
  // move bytes only while this rank progresses them).
  void drain_lanes();
  Connection& connection_for(const Task& t);
  ssize_t receive_bytes(Connection& c, void* data, size_t size);
  // Receive-and-reduce straight out of a shared-memory ring; false when the
  // ready bytes cannot be reduced in place (none, misaligned, wrapped).
  bool reduce_from_ring(Connection& c, Task& t);
  void ring_doorbell(Connection& lane);
  void flush_control(Connection& c);
  // Queues a frame that carries no task (doorbell, status, placement offers)
  // on TCP connection `c`, between its frames, and sends what it can.
  void send_control(Connection& c, FrameHeader h, std::span<const uint8_t> payload = {});
  // Moves what it can on every shared-memory link; true when bytes moved.
  bool pump_lanes();
  // Progresses a lane's rings; true when bytes moved. A write the provider
  // could not land fails as the peer's loss unless `moot()` says it is.
  template <typename Moot>
  bool progress_lane(Connection& lane, Moot&& moot);
  // Calls `look` until it returns true (then true) or kSpinMicros pass.
  template <typename Look>
  bool spin(Look&& look);
  // Arms the wake-up flags before sleeping; false when a link has work now.
  bool arm_lanes();
  // Posts and takes what mail it can; true when some moved.
  bool exchange_mail(const MailExchange& x);
  // Placements: at a collective plan's start, registers and offers the
  // destinations of its receives from RDMA peers that are not reduced and
  // hold at least kRmaLendMinBytes (not while staged input is still being
  // copied: a placed write could land before the copy of that range).
  void offer_placements(Plan& plan);
  void take_placement_offers(Connection& c);  // a placement frame read on `c`
  // The offer for send task `t`, if its receiver made one of its size.
  bool take_placement(const Task& t, RemoteRegion* to);
  // Deregisters what offer_placements registered; drops offers of this plan.
  void withdraw_placements();
  void enqueue_send(int task);
  void complete(int task);
  // Completes a lane's sends whose lent payload its ring has let go of.
  void complete_lent_sends(Connection& lane);
  void handle_readable(Connection& c);
  void handle_writable(Connection& c);
  bool start_frame(Connection& c);  // false: parked for a later plan
  void finish_receive(Connection& c);
  [[noreturn]] void fail_on(Connection& c, StatusCode code, const std::string& why);
  // The peer's collective `seq` is another call than the running plan's.
  [[noreturn]] void fail_signature_mismatch(Connection& c, uint64_t seq,
                                            const CallSignature& theirs);
  // A call's plan published to abort() (which then wakes the call instead
  // of failing the transport) and withdrawn; enter() throws when the
  // transport failed earlier.
  void enter(Plan& plan);
  void leave();
  // Raises the failure recorded in failure_code_ and failure_ (abort_mutex_ held).
  [[noreturn]] void throw_failure() const;
  // The running plan failed with `e` (called in its handler): the
  // transport fails for good, tells the peers why, and rethrows.
  [[noreturn]] void fail_run(const Error& e);
  // The peer's connection broke: first read what it already sent on its
  // sockets, so an abort frame's reason wins over a bare "connection closed".
  [[noreturn]] void fail_lost_peer(Connection& c, const std::string& why);
  void shut_down_connections(const std::string* abort_reason);
  std::string pending_summary() const;
  // Where this rank waits, for a status frame and the hang view.
  WaitState own_wait_state() const;
  // Queues a status frame to `peer` on a TCP connection free between
  // frames; a peer whose connections are all mid-frame is not asked.
  void send_status(int peer);
  // On the deadline: asks every peer where it waits, once; true when the
  // answers are in or the asking time is over (then the error is thrown).
  bool hang_view_ready();

  int rank_;
  std::vector<PeerInfo> peers_;
  TransportOptions options_;
  std::vector<std::vector<std::unique_ptr<Connection>>> connections_;  // [peer][socket]
  std::vector<Connection*> all_connections_;  // TCP connections and shared-memory lanes
  // Before lanes_: the rings deregister their memory from it as they go.
  std::unique_ptr<RmaEndpoint> rma_;
  std::vector<std::unique_ptr<Connection>> lanes_;
  std::vector<std::string> link_of_peer_;
  bool lanes_wake_by_doorbell_ = true;
  // More ranks on this host than CPUs: spinning yields the core.
  bool spin_yields_ = true;
  std::vector<Connection*> lane_of_peer_;  // nullptr: the peer is reached over TCP
  std::vector<bool> mailbox_peers_;
  int mailbox_count_ = 0;
  uint64_t mail_seq_ = 0;  // the running exchange's sequence number
  int mail_left_ = 0;      // posts and takes it still owes
  uint64_t lane_bytes_moved_ = 0;
  int refused_connections_ = 0;

  uint64_t next_collective_seq_ = 0;
  std::vector<uint64_t> next_send_seq_, next_recv_seq_;
  // Per peer: 1 + the newest collective sequence number a frame of it
  // carried (0: none yet), so a timeout can say who never entered.
  std::vector<uint64_t> newest_collective_seen_;

  // State of the plan being run.
  Plan* plan_ = nullptr;
  Deadline deadline_{0};
  size_t remaining_ = 0;
  std::vector<pollfd> poll_fds_;  // reused by every run
  std::vector<Connection*> polled_;
  std::unordered_map<Key, int, KeyHash> receives_;
  // Placements (RDMA lanes): which of the running plan's receives this rank
  // offered, by task (their memory is registered until withdrawn), the bytes
  // that landed placed; and the peers' offers not used yet (Key.peer: the
  // receiver).
  std::vector<char> offered_;
  uint64_t placed_bytes_ = 0;
  std::unordered_map<Key, RemoteRegion, KeyHash> placements_;
  // The timeout's job-wide view: peers' answers and whom this rank told.
  std::vector<WaitState> peer_waits_;
  std::vector<bool> status_sent_;
  bool asking_peers_ = false;

  std::mutex abort_mutex_;
  std::atomic<bool> abort_requested_{false};
  // A call is running (between enter() and leave()): abort() wakes it
  // rather than failing the transport from its own thread.
  std::atomic<bool> in_call_{false};
  std::string abort_reason_;
  int wake_pipe_[2] = {-1, -1};
  bool scanning_lost_peer_ = false;
  // The running plan's progress work (other than mail) is not done: every
  // peer is needed.
  bool progress_pending_ = false;
  std::atomic<bool> failed_{false};  // set under abort_mutex_, with failure_ and its code
  std::string failure_;
  StatusCode failure_code_ = StatusCode::kOk;
};

}  // namespace polychip::comm
