#include "polychip/comm/communicator.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "algorithms/algorithms.hpp"
#include "algorithms/gdr_ring.hpp"
#include "bootstrap/store.hpp"
#include "polychip/comm/case_runner.hpp"
#include "polychip/comm/island_ccl.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "staging/staging.hpp"
#include "transport/open_file_limit.hpp"
#include "transport/rdma/gdr_endpoint.hpp"
#include "transport/transport.hpp"
#include "wire/byte_io.hpp"
#include "wire/wire.hpp"

namespace polychip::comm {
namespace {

constexpr uint32_t kUniqueIdMagic = 0x31554350;  // "PCU1"

JobId job_id_for(const std::vector<uint8_t>& secret) {
  std::vector<uint8_t> m = {'j', 'o', 'b', '|'};
  m.insert(m.end(), secret.begin(), secret.end());
  Digest d = sha256(m);
  JobId id;
  copy_bytes(id.data(), d.data(), id.size());
  return id;
}

// The address other hosts should use for a unique id's store: our
// hostname's first non-loopback IPv4 address, else loopback (one host).
std::string advertised_host_address() {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string chosen = "127.0.0.1";
  if (::getaddrinfo(local_hostname().c_str(), nullptr, &hints, &res) == 0) {
    for (addrinfo* ai = res; ai; ai = ai->ai_next) {
      char buf[INET_ADDRSTRLEN] = {0};
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr, buf, sizeof(buf));
      if (std::string(buf).rfind("127.", 0) != 0) {
        chosen = buf;
        break;
      }
    }
    ::freeaddrinfo(res);
  }
  return chosen;
}

std::mutex& store_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::unique_ptr<StoreServer>>& id_stores() {
  static std::vector<std::unique_ptr<StoreServer>> stores;
  return stores;
}

// Rank 0's rendezvous store socket: the one the local launcher handed down
// (POLYCHIP_COMM_STORE_FD) for the first communicator of this process that
// takes it, else a new one on MASTER_PORT.
Fd store_listener(const LaunchInfo& launch, const std::string& listen_address) {
  static std::mutex inherited_mutex;
  static bool inherited_taken = false;
  std::lock_guard<std::mutex> lock(inherited_mutex);
  if (launch.store_listener_fd >= 0 && !inherited_taken) {
    Fd listener = adopt_listening_socket(launch.store_listener_fd, launch.master_port,
                                         "POLYCHIP_COMM_STORE_FD");
    inherited_taken = true;
    return listener;
  }
  return listen_tcp(listen_address, launch.master_port).first;
}

// What every rank's frames of this call carry (wire.hpp CallSignature).
CallSignature call_signature(const CallRecord& rec, Collective collective) {
  CallSignature call;
  call.collective = static_cast<uint8_t>(collective);
  call.dtype = static_cast<uint8_t>(rec.dtype);
  call.op = static_cast<uint8_t>(rec.op);
  call.root = rec.root;
  call.count = rec.count;
  return call;
}

}  // namespace

std::string describe_call(const CallSignature& call) {
  const bool known = call.collective >= 1 && call.collective <= kCollectiveKinds;
  const std::string name = known ? std::string(collective_name(Collective{call.collective}))
                                 : "collective " + std::to_string(call.collective);
  std::string text = name + "(" + std::string(dtype_name(static_cast<DType>(call.dtype))) +
                     ", count " + std::to_string(call.count);
  if (name == "all_reduce" || name == "reduce" || name == "reduce_scatter")
    text += ", op " + std::string(reduce_op_name(static_cast<ReduceOp>(call.op)));
  if (call.root >= 0) text += ", root " + std::to_string(call.root);
  return text + ")";
}

struct Communicator::Impl {
  CommConfig config;
  int rank = 0;
  int world = 1;
  std::unique_ptr<StoreServer> store_server;
  std::unique_ptr<Transport> transport;
  std::vector<RankInfo> ranks;
  int islands = 1;
  // The configuration's per-call choices, decided once (string compares
  // would show in the latency of small calls).
  bool all_reduce_hierarchical = false;
  enum class Choice { kNo, kYes, kAuto };
  Choice staging_overlap = Choice::kAuto;         // POLYCHIP_COMM_STAGING overlap / whole / auto
  Algorithm algorithm_forced = Algorithm::kNone;  // POLYCHIP_COMM_ALGO; kNone: by size
  Scratch scratch;
  // reduce_scatter's input, copied when its output overlaps it other than
  // in place; kept across calls (a fresh 64 MiB per call cost 4x its time).
  std::vector<uint8_t> overlapped_input;
  // The hierarchical all-reduce's island accumulators (leaders), kept
  // across calls as `scratch` is (the builders it runs use that one).
  Scratch island_partial;
  Group whole_group;  // whole(): every rank, in rank order
  Staging staging;
  // The most recent calls: a training job makes millions, so the oldest
  // kHistoryKept are dropped whenever twice that many are held.
  static constexpr size_t kHistoryKept = 1024;
  std::vector<CallRecord> history;
  uint64_t calls_begun = 0;
  Collective collective_begun = Collective::kAllReduce;  // of the latest collective's begin()
  std::string transport_label;  // transport_name(), fixed once the links are
  int group_depth = 0;
  struct P2P {
    bool is_send;
    BufferRef data;
    uint64_t count;
    DType dtype;
    int peer;
  };
  std::vector<P2P> group_p2p;
  std::vector<std::function<void()>> group_collectives;
  std::unique_ptr<IslandCollectives> island_ccl;
  // The GDR path's endpoint: set when every rank opened one on one provider.
  std::unique_ptr<GdrEndpoint> gdr;
  std::set<std::string> gdr_reasons_told;

  // Before any socket: a limit too low for the job is said at once, by every
  // rank, rather than as EMFILE half-way through the mesh. Rank 0 serves the
  // store (under a unique id, the process that made the id does: most often
  // rank 0's).
  void reserve_open_files() const {
    const bool serves_store = rank == 0;
    ensure_open_file_limit(
        // (a sockets_per_peer out of range is refused by the transport, later)
        open_files_needed(
            world, std::clamp(config.sockets_per_peer, 1, static_cast<int>(kMaxSocketsPerPeer)),
            serves_store),
        fmt::format("a {}-rank job{}", world,
                    serves_store ? " (this rank serving its rendezvous store)" : ""));
  }

  void init(const std::string& store_host, uint16_t store_port, const Credentials& creds) {
    if (world < 1 || rank < 0 || rank >= world) {
      throw_error(
          StatusCode::kInvalidArgument,
          "rank " + std::to_string(rank) + " is outside world size " + std::to_string(world));
    }
    auto [listener, port] = listen_tcp(config.listen_address, 0);
    Deadline deadline(config.timeout_seconds);
    StoreClient store(store_host, store_port, creds, static_cast<uint32_t>(rank),
                      static_cast<uint32_t>(world), deadline);
    PeerInfo me;
    me.rank = static_cast<uint32_t>(rank);
    me.host = local_hostname();
    me.address =
        !config.advertise_address.empty() ? config.advertise_address : store.local_address();
    me.port = port;
    me.device_type = config.device_type;
    me.vendor = config.vendor;
    me.pid = static_cast<uint32_t>(::getpid());
    // Before the peer record: a rank whose record is there has its offer there.
    const std::string gdr_offer = open_gdr_endpoint(me.address);
    store.set("gdr/" + std::to_string(rank),
              std::vector<uint8_t>(gdr_offer.begin(), gdr_offer.end()));
    store.set("peer/" + std::to_string(rank), encode_peer_info(me));
    std::vector<PeerInfo> peers(world);
    for (int r = 0; r < world; ++r) {
      peers[r] = r == rank ? me : parse_peer_info(store.get("peer/" + std::to_string(r)));
      if (static_cast<int>(peers[r].rank) != r) {
        throw_error(StatusCode::kDataCorruption, "rendezvous: record for rank " +
                                                     std::to_string(r) + " names rank " +
                                                     std::to_string(peers[r].rank));
      }
    }
    TransportOptions topts;
    topts.timeout_seconds = config.timeout_seconds;
    topts.checksum = config.checksum;
    topts.sockets_per_peer = config.sockets_per_peer;
    topts.shared_memory = config.transport == "auto";
    topts.shm_ring_bytes = config.shm_ring_bytes;
    topts.rdma = config.transport == "rdma"   ? TransportOptions::Rdma::kEveryPeer
                 : config.transport == "auto" ? TransportOptions::Rdma::kAcrossHosts
                                              : TransportOptions::Rdma::kOff;
    topts.rdma_ring_bytes = config.shm_ring_bytes;
    topts.rdma_placement = config.rdma_placement;
    {
      // A rank that dies while the others wait for its connections is
      // reported by the store, and ends their waits at once.
      LostPeerWatch watch(store);
      topts.setup_cancelled = watch.cancelled();
      try {
        transport = std::make_unique<Transport>(rank, peers, std::move(listener), creds, topts);
      } catch (const Error& e) {
        // A peer that hung up may have been told by the store that a third
        // rank left; that rank is the cause to report.
        const std::string lost = e.code() == StatusCode::kUnavailable
                                     ? watch.stop_after(std::chrono::seconds(1))
                                     : watch.stop();
        if (lost.empty()) throw;
        throw_error(StatusCode::kUnavailable, "communicator setup: " + lost);
      }
      const std::string lost = watch.stop();
      if (!lost.empty()) throw_error(StatusCode::kUnavailable, "communicator setup: " + lost);
    }
    if (gdr || config.path == "gdr") {
      std::vector<std::string> offers(world);
      for (int r = 0; r < world; ++r) {
        const std::vector<uint8_t> offer = store.get("gdr/" + std::to_string(r));
        offers[r].assign(offer.begin(), offer.end());
      }
      const std::string why_not = GdrEndpoint::why_not(offers);
      if (why_not.empty()) {
        gdr->connect(rank, offers);
      } else {
        gdr.reset();
        if (config.path == "gdr")
          std::fprintf(stderr, "polychip comm: rank %d: GDR path off: %s\n", rank, why_not.c_str());
      }
    }
    // Only now: a rank that leaves the store before this failed its set-up.
    store.add(kStoreReadyKey, 1);
    std::map<std::string, int> island_ids;
    for (const PeerInfo& p : peers) island_ids.emplace(p.device_type, 0);
    int next = 0;
    for (auto& [type, id] : island_ids) id = next++;
    islands = next;
    for (const PeerInfo& p : peers) {
      ranks.push_back({static_cast<int>(p.rank), p.host, p.address, p.port, p.device_type, p.vendor,
                       island_ids[p.device_type]});
    }
    IslandContext ic;
    ic.device_type = config.device_type;
    ic.global_ranks = island_members(ranks[rank].island);
    ic.my_position = static_cast<int>(
        std::find(ic.global_ranks.begin(), ic.global_ranks.end(), rank) - ic.global_ranks.begin());
    island_ccl = make_island_ccl(ic);
    for (int r = 0; r < world; ++r) whole_group.ranks.push_back(r);
    whole_group.me = rank;
    all_reduce_hierarchical =
        config.path == "hierarchical" || (config.path == "auto" && islands > 1 && island_ccl);
    staging_overlap = config.staging == "overlap" ? Choice::kYes
                      : config.staging == "auto"  ? Choice::kAuto
                                                  : Choice::kNo;
    algorithm_forced = config.algorithm == "ring"     ? Algorithm::kRing
                       : config.algorithm == "direct" ? Algorithm::kDirect
                                                      : Algorithm::kNone;
    if (store_server) store_server->join();
  }

  // Opens this rank's GDR endpoint when the path may be wanted; returns
  // the offer to publish (or why there is none).
  std::string open_gdr_endpoint(const std::string& address) {
    const bool wanted =
        config.path == "gdr" || (config.path == "auto" && config.transport == "rdma");
    if (!wanted || world < 2)
      return GdrEndpoint::no_offer("not asked for (POLYCHIP_COMM_PATH=" + config.path + ")");
    const char* provider = std::getenv("POLYCHIP_NET_PROVIDER");
    const std::string name = provider ? provider : "";
    try {
      gdr = std::make_unique<GdrEndpoint>(name, name == "shm" ? "" : address);
      return gdr->offer();
    } catch (const Error& e) {
      return GdrEndpoint::no_offer(e.message());
    }
  }

  static const char* gdr_collective_name(GdrCollective collective) {
    switch (collective) {
      case GdrCollective::kAllReduce:
        return "all_reduce";
      case GdrCollective::kReduceScatter:
        return "reduce_scatter";
      case GdrCollective::kAllGather:
        return "all_gather";
      case GdrCollective::kBroadcast:
        return "broadcast";
      case GdrCollective::kReduce:
        return "reduce";
    }
    return "?";
  }
  static bool gdr_sums(GdrCollective c) {
    return c == GdrCollective::kAllReduce || c == GdrCollective::kReduceScatter ||
           c == GdrCollective::kReduce;
  }
  // Which of its buffers a rank touches: a broadcast's ranks but the root
  // give no input, a reduce's ranks but the root get no output.
  struct GdrRoles {
    bool reads_send = true, writes_recv = true;
  };
  GdrRoles gdr_roles(GdrCollective c, int root) const {
    return {c != GdrCollective::kBroadcast || rank == root,
            c != GdrCollective::kReduce || rank == root};
  }
  // The bytes of send and recv a GDR call registers, from its per-rank `bytes`.
  std::pair<uint64_t, uint64_t> gdr_buffer_bytes(GdrCollective collective, uint64_t bytes) const {
    switch (collective) {
      case GdrCollective::kAllReduce:
        return {bytes, bytes};
      case GdrCollective::kReduceScatter:
        return {bytes * world, bytes};
      case GdrCollective::kAllGather:
        return {bytes, bytes * world};
      case GdrCollective::kBroadcast:
      case GdrCollective::kReduce:
        return {bytes, bytes};
    }
    return {0, 0};
  }

  // Why the call itself cannot take the GDR path, from what every rank's
  // call has in common (its signature): every rank decides alike, with no
  // offers exchanged. Empty when it can.
  std::string gdr_why_not_call(GdrCollective collective, uint64_t count, DType dtype,
                               ReduceOp op) const {
    const bool reduce = gdr_sums(collective);
    if (reduce && op != ReduceOp::kSum)
      return "op " + std::string(reduce_op_name(op)) + " (GDR: sum)";
    if (reduce && dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16 &&
        dtype != DType::kF64)
      return "dtype " + std::string(dtype_name(dtype)) + " (GDR: f32, f16, bf16, f64)";
    if (collective == GdrCollective::kAllReduce && count < static_cast<uint64_t>(world))
      return std::to_string(count) + " elements for " + std::to_string(world) + " ranks";
    // Chosen by `auto`, GDR leaves latency-bound calls to the host path:
    // its offers cost a round trip.
    if (config.path == "auto" && count * dtype_size(dtype) <= config.small_bytes)
      return "a small message (POLYCHIP_COMM_SMALL_BYTES)";
    return {};
  }

  // Empty when this rank's buffers can take the GDR path (then exported
  // into `*send_out` and `*recv_out` as the roles need); `buffer_bytes`:
  // gdr_buffer_bytes().
  std::string gdr_why_not(GdrCollective collective, const BufferRef& send, const BufferRef& recv,
                          std::pair<uint64_t, uint64_t> buffer_bytes, DType dtype, GdrRoles roles,
                          GdrEndpoint::CallBuffer* send_out, GdrEndpoint::CallBuffer* recv_out) {
    if (roles.reads_send && !send.on_device()) return "send is not device memory";
    if (roles.writes_recv && !recv.on_device()) return "recv is not device memory";
    if (roles.reads_send && roles.writes_recv && !(*send.device() == *recv.device()))
      return "send and recv are not memory of one device";
    const Device& device = roles.reads_send ? *send.device() : *recv.device();
    if (gdr_sums(collective) &&
        !device.runtime().dispatcher().has_kernel(device, "add", {dtype, dtype, dtype}))
      return device.label() + " has no add kernel for " + std::string(dtype_name(dtype));
    const auto [send_bytes, recv_bytes] = buffer_bytes;
    std::string why = roles.reads_send ? gdr->export_for_call(send, send_bytes, send_out) : "";
    if (why.empty() && roles.writes_recv) why = gdr->export_for_call(recv, recv_bytes, recv_out);
    return why;
  }

  // A collective on the GDR path (all but all-to-all and send/recv). Every
  // rank first hands every other its call offer; if any rank cannot take the path, every
  // rank returns false and the call takes the host path (under its next
  // sequence number).
  bool gdr_collective(GdrCollective collective, const BufferRef& send, const BufferRef& recv,
                      uint64_t count, DType dtype, ReduceOp op, CallRecord& rec, int root = -1) {
    const char* name = gdr_collective_name(collective);
    const uint64_t bytes = count * dtype_size(dtype);
    const std::pair<uint64_t, uint64_t> buffer_bytes = gdr_buffer_bytes(collective, bytes);
    const GdrRoles roles = gdr_roles(collective, root);
    // Calls on host memory are no GDR candidates: nothing to tell.
    const bool candidate =
        (roles.reads_send && send.on_device()) || (roles.writes_recv && recv.on_device());
    std::string why = gdr_why_not_call(collective, count, dtype, op);
    if (!why.empty()) {
      if (config.path == "gdr" && candidate && gdr_reasons_told.insert(why).second)
        std::fprintf(stderr, "polychip comm: rank %d: %s takes the host path, not GDR: %s\n", rank,
                     name, why.c_str());
      return false;
    }
    GdrEndpoint::CallBuffer send_buffer, recv_buffer;
    why =
        gdr_why_not(collective, send, recv, buffer_bytes, dtype, roles, &send_buffer, &recv_buffer);
    // The device this rank's part of the call runs on.
    const Device* device = !why.empty()       ? nullptr
                           : roles.reads_send ? send.device()
                                              : recv.device();
    CallOffer mine;
    GdrRingArgs args;
    if (why.empty()) {
      try {
        if (roles.reads_send) gdr->register_buffer(send_buffer, &args.send_local);
        if (roles.writes_recv) mine.recv = gdr->register_buffer(recv_buffer, &args.recv_local);
        // Partial sums land in the scratch: an all-reduce's chunks, then
        // (reduce-scatter, reduce) as much again for the running sums.
        if (collective == GdrCollective::kAllReduce)
          args.scratch = &gdr->scratch(*device, bytes, &mine.scratch);
        if (collective == GdrCollective::kReduceScatter || collective == GdrCollective::kReduce)
          args.scratch =
              &gdr->scratch(*device, 2 * buffer_bytes.first, &mine.scratch, &args.scratch_local);
        mine.credit = gdr->credit_region();
        mine.eligible = true;
      } catch (const Error& e) {
        why = e.message();
        gdr->release();
      }
    }
    const std::vector<uint8_t> own = mine.encode();
    std::vector<uint8_t> offers(world * CallOffer::kBytes);
    const std::string plan_name = std::string(name) + "/gdr";
    Plan plan = collective_plan(plan_name.c_str());
    const uint64_t seq = plan.seq();
    BuildContext ctx{&plan, whole(), config.chunk_bytes, &scratch, {}, {}};
    build_direct_all_gather(ctx, own.data(), offers.data(), CallOffer::kBytes);
    int offers_in = 0;
    for (size_t t = 0; t < plan.tasks().size(); ++t)
      if (!plan.tasks()[t].is_send) plan.on_complete(static_cast<int>(t), [&] { ++offers_in; });
    int refused_by = -1;
    std::unique_ptr<GdrRing> ring;
    bool own_block_copied = false;
    plan.set_progress([&](bool* moved) {
      if (!ring) {
        if (offers_in < world - 1) return false;
        std::vector<CallOffer> all(world);
        for (int r = 0; r < world; ++r) {
          all[r] = CallOffer::decode(offers.data() + r * CallOffer::kBytes);
          if (!all[r].eligible && refused_by < 0) refused_by = r;
        }
        if (refused_by >= 0) return true;
        args.collective = collective;
        args.rank = rank;
        args.world = world;
        args.seq = seq;
        args.dtype = dtype;
        args.count = count;
        args.root = root;
        args.slice_bytes = config.chunk_bytes;
        args.send = send;
        args.recv = recv;
        args.next = all[(rank + 1) % world];
        args.prev = all[(rank + world - 1) % world];
        args.stream = &staging.stream_for(*device);
        // This rank's own block (an all-gather's; a broadcast root's whole
        // output): a copy on the device, beside the ring.
        const bool copies_own = collective == GdrCollective::kAllGather ||
                                (collective == GdrCollective::kBroadcast && rank == root);
        const uint64_t own_at = collective == GdrCollective::kAllGather ? rank * bytes : 0;
        if (copies_own && !send.same_memory(recv.at(own_at))) {
          staging.copy_on_device(send, recv, own_at, bytes, args.stream);
          own_block_copied = true;
        }
        ring = std::make_unique<GdrRing>(*gdr, args);
      }
      return ring->progress(moved);
    });
    try {
      transport->run(plan);
      if (own_block_copied) args.stream->synchronize();
    } catch (...) {
      gdr->release();
      throw;
    }
    gdr->release();
    if (refused_by >= 0) {
      const std::string reason =
          refused_by == rank ? why : "rank " + std::to_string(refused_by) + "'s buffers cannot";
      if (config.path == "gdr" && candidate && gdr_reasons_told.insert(reason).second)
        std::fprintf(stderr, "polychip comm: rank %d: %s takes the host path, not GDR: %s\n", rank,
                     name, reason.c_str());
      return false;
    }
    rec.path = DataPath::kGdr;
    rec.algorithm = Algorithm::kRing;
    rec.transport = "gdr:" + gdr->provider();
    return true;
  }

  std::vector<int> island_members(int island) const {
    std::vector<int> members;
    for (const RankInfo& r : ranks) {
      if (r.island == island) members.push_back(r.rank);
    }
    return members;
  }

  const Group& whole() const { return whole_group; }

  // Latency-bound direct exchanges (all-reduce, all-gather) take this
  // rank's `bytes` to its same-host peers through mailboxes. Every rank
  // decides alike: a pair has mailboxes at both ends or at neither, and
  // with POLYCHIP_COMM_CHECKSUM (no CRC on mail) none.
  bool mail_fits(uint64_t bytes) const {
    return bytes <= Transport::kMailboxBlockBytes && transport->has_mailboxes() && !config.checksum;
  }

  bool use_direct(uint64_t bytes) const {
    if (algorithm_forced != Algorithm::kNone) return algorithm_forced == Algorithm::kDirect;
    return bytes <= config.small_bytes;
  }

  std::string transport_name() const {
    if (world == 1) return "local";
    std::string links = transport->link_summary();
    return config.checksum ? links + "+crc32c" : links;
  }

  // The plan of the running call's next collective sequence number, signed
  // with the call (every rank's frames carry the signature). `name` is
  // kept, not copied.
  Plan collective_plan(const char* name) {
    Plan plan(FrameKind::kCollective, transport->next_collective_seq(), name);
    plan.set_call(call_signature(history.back(), collective_begun));
    return plan;
  }

  // Runs one plan built by `build` under a fresh collective sequence number.
  // With `io`, the plan waits for staged input range by range and hands
  // final output ranges back to the device as they complete.
  void run_collective(const char* name, const std::function<Finish(BuildContext&)>& build,
                      const Group& group, StreamedStaging* io = nullptr) {
    Plan plan = collective_plan(name);
    BuildContext ctx{&plan, group, config.chunk_bytes, &scratch, {}, {}};
    if (io) {
      plan.set_before_access([io](const uint8_t* p, uint64_t n) { io->wait_input(p, n); });
      ctx.output_final = [io](const uint8_t* p, uint64_t n) { io->output_final(p, n); };
      ctx.wait_input = [io] { io->wait_all_input(); };
    }
    Finish finish = build(ctx);
    if (io && finish) io->wait_all_input();  // a finish step may read any input
    if (!plan.empty()) {
      transport->run(plan);
      if (!history.empty()) history.back().placed_bytes += transport->placed_bytes();
    }
    if (finish) finish();
  }

  // A collective's call: its kind is kept for the frames' signature (a
  // name parsed back per call showed in small calls' latency).
  CallRecord& begin(Collective collective, DType dtype, ReduceOp op, uint64_t count,
                    int root = -1) {
    CallRecord& rec = begin(collective_name(collective), dtype, op, count, root);
    collective_begun = collective;
    return rec;
  }
  CallRecord& begin(std::string_view name, DType dtype, ReduceOp op, uint64_t count,
                    int root = -1) {
    check_comm_dtype(dtype, "dtype");
    if (world == 1) transport->throw_if_failed();  // more ranks: the transport's run checks
    if (history.size() == 2 * kHistoryKept) {
      history.erase(history.begin(), history.begin() + kHistoryKept);
    } else if (history.capacity() < 2 * kHistoryKept) {
      history.reserve(2 * kHistoryKept);
    }
    if (transport_label.empty()) transport_label = transport_name();
    CallRecord& rec = history.emplace_back();
    rec.seq = calls_begun++;
    rec.collective.assign(name);
    rec.dtype = dtype;
    rec.op = op;
    rec.count = count;
    rec.root = root;
    rec.bytes = count * dtype_size(dtype);
    rec.transport = transport_label;
    return rec;
  }

  void check_root(int root) const {
    if (root < 0 || root >= world) {
      throw_error(
          StatusCode::kInvalidArgument,
          "root " + std::to_string(root) + " is outside [0, " + std::to_string(world) + ")");
    }
  }
  void check_peer(int peer) const {
    if (peer < 0 || peer >= world) {
      throw_error(
          StatusCode::kInvalidArgument,
          "peer " + std::to_string(peer) + " is outside [0, " + std::to_string(world) + ")");
    }
  }

  // `io` (may be null) streams staged buffers through the ring algorithm;
  // the other paths read the whole input first.
  void all_reduce_host(const uint8_t* in, uint8_t* out, uint64_t count, DType dtype, ReduceOp op,
                       CallRecord& rec, bool hierarchical, StreamedStaging* io = nullptr) {
    Reduction r{dtype, op, world};
    bool direct = use_direct(rec.bytes);
    if (io && (world == 1 || hierarchical || direct)) io->wait_all_input();
    if (world == 1) {
      DType A = accumulation_type(dtype);
      if (A != dtype) {
        std::vector<float> acc(count);
        widen_to_f32(in, dtype, acc.data(), count);
        finalize_reduction(acc.data(), A, out, dtype, count, op, 1);
      } else {
        finalize_reduction(in, A, out, dtype, count, op, 1);
      }
      rec.algorithm = Algorithm::kNone;
      return;
    }
    if (hierarchical) {
      hierarchical_all_reduce(in, out, count, r, rec);
      return;
    }
    rec.algorithm = direct ? Algorithm::kDirect : Algorithm::kRing;
    if (direct && mail_fits(rec.bytes)) {
      Plan plan = collective_plan("all_reduce");
      uint8_t* gathered = plan_direct_all_reduce_frames(plan, whole(), config.chunk_bytes, scratch,
                                                        in, rec.bytes, transport->mailbox_peers());
      transport->run_with_mailboxes(plan, in, rec.bytes, gathered);
      reduce_gathered_inputs(whole(), gathered, in, out, count, r, scratch);
      rec.mailbox = true;
      return;
    }
    run_collective(
        "all_reduce",
        [&](BuildContext& ctx) {
          return direct ? build_direct_all_reduce(ctx, in, out, count, r)
                        : build_ring_all_reduce(ctx, in, out, count, r);
        },
        whole(), direct ? nullptr : io);
  }

  // Intra-island reduce -> inter-island all-reduce between leaders ->
  // intra-island broadcast. Three collective sequence numbers on every rank.
  void hierarchical_all_reduce(const uint8_t* in, uint8_t* out, uint64_t count, const Reduction& r,
                               CallRecord& rec) {
    const DType A = accumulation_type(r.dtype);
    const size_t a = dtype_size(A), d = dtype_size(r.dtype);
    Group island;
    island.ranks = island_members(ranks[rank].island);
    island.me = static_cast<int>(std::find(island.ranks.begin(), island.ranks.end(), rank) -
                                 island.ranks.begin());
    const bool leader = island.me == 0;
    Group leaders;
    for (int i = 0; i < islands; ++i) leaders.ranks.push_back(island_members(i).front());
    std::sort(leaders.ranks.begin(), leaders.ranks.end());
    leaders.me = static_cast<int>(std::find(leaders.ranks.begin(), leaders.ranks.end(), rank) -
                                  leaders.ranks.begin());
    uint8_t* partial = leader ? island_partial.get(0, count * a) : nullptr;
    const bool direct = use_direct(count * d);
    Reduction partial_r{r.dtype, r.op == ReduceOp::kAvg ? ReduceOp::kSum : r.op, 1};
    // 1. island reduce to the leader (partial accumulators).
    if (island_ccl) {
      transport->next_collective_seq();
      island_ccl->reduce(in, partial, count, r.dtype, partial_r.op, 0);
    } else if (island.size() == 1) {
      transport->next_collective_seq();
      if (A != r.dtype) {
        widen_to_f32(in, r.dtype, reinterpret_cast<float*>(partial), count);
      } else {
        copy_bytes(partial, in, count * a);
      }
    } else {
      run_collective(
          "all_reduce/island_reduce",
          [&](BuildContext& ctx) {
            return direct ? build_direct_reduce(ctx, in, partial, count, partial_r, 0, false)
                          : build_chain_reduce(ctx, in, partial, count, partial_r, 0, false);
          },
          island);
    }
    // 2. leaders all-reduce the accumulators, then finalise (avg over the world).
    if (leader && leaders.size() > 1) {
      Reduction leader_r{A, partial_r.op, 1};
      run_collective(
          "all_reduce/leaders",
          [&](BuildContext& ctx) {
            return direct ? build_direct_all_reduce(ctx, partial, partial, count, leader_r)
                          : build_ring_all_reduce(ctx, partial, partial, count, leader_r);
          },
          leaders);
    } else {
      transport->next_collective_seq();
    }
    if (leader) finalize_reduction(partial, A, out, r.dtype, count, r.op, world);
    // 3. island broadcast of the final bits.
    if (island_ccl) {
      transport->next_collective_seq();
      island_ccl->broadcast(out, count * d, 0);
    } else if (island.size() > 1) {
      run_collective(
          "all_reduce/island_broadcast",
          [&](BuildContext& ctx) {
            return direct ? build_direct_broadcast(ctx, out, out, count * d, 0)
                          : build_chain_broadcast(ctx, out, out, count * d, 0);
          },
          island);
    } else {
      transport->next_collective_seq();
    }
    rec.algorithm = direct ? Algorithm::kDirect : Algorithm::kRing;
    rec.path = island_ccl ? DataPath::kVendorCcl : DataPath::kHierarchical;
    if (island_ccl) rec.transport += "+" + island_ccl->name();
  }

  void p2p(const std::vector<P2P>& ops) {
    Plan plan(FrameKind::kPointToPoint, 0, "send/recv");
    std::vector<Staging::Lease> leases;
    std::vector<uint8_t*> host(ops.size());
    std::vector<std::pair<size_t, uint8_t*>> copy_back;  // op index, host pointer
    for (size_t i = 0; i < ops.size(); ++i) {
      const P2P& op = ops[i];
      if (op.peer == rank) {
        throw_error(StatusCode::kInvalidArgument, "send/recv to self is not supported");
      }
      uint64_t bytes = op.count * dtype_size(op.dtype);
      host[i] = op.is_send ? staging.input(op.data, bytes, leases)
                           : staging.output(op.data, bytes, leases);
      if (!op.is_send && staging.staged(op.data)) copy_back.emplace_back(i, host[i]);
    }
    // A send whose bytes a receive of the same group overwrites (in place,
    // e.g. a ring shift) sends a snapshot: receives may land before the
    // send has left.
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!ops[i].is_send) continue;
      const uint64_t bytes = ops[i].count * dtype_size(ops[i].dtype);
      for (size_t j = 0; j < ops.size() && bytes > 0; ++j) {
        const uint64_t rbytes = ops[j].count * dtype_size(ops[j].dtype);
        if (ops[j].is_send || host[j] >= host[i] + bytes || host[i] >= host[j] + rbytes) continue;
        uint8_t* snapshot = staging.lease(bytes, leases);
        copy_bytes(snapshot, host[i], bytes);
        host[i] = snapshot;
        break;
      }
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      const P2P& op = ops[i];
      uint64_t bytes = op.count * dtype_size(op.dtype);
      uint64_t frames = bytes == 0 ? 1 : (bytes + config.chunk_bytes - 1) / config.chunk_bytes;
      for (uint64_t c = 0; c < frames; ++c) {
        uint64_t off = c * config.chunk_bytes, len = std::min(config.chunk_bytes, bytes - off);
        if (bytes == 0) len = 0;
        uint64_t seq =
            op.is_send ? transport->next_send_seq(op.peer) : transport->next_recv_seq(op.peer);
        int t = op.is_send ? plan.send(op.peer, 0, static_cast<uint32_t>(c), host[i] + off, len)
                           : plan.recv(op.peer, 0, static_cast<uint32_t>(c), host[i] + off, len);
        plan.set_seq(t, FrameKind::kPointToPoint, seq);
      }
    }
    if (!plan.empty()) transport->run(plan);
    for (auto& [i, h] : copy_back) {
      staging.copy_back(ops[i].data, h, ops[i].count * dtype_size(ops[i].dtype));
    }
  }
};

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kAvg:
      return "avg";
  }
  return "?";
}

ReduceOp parse_reduce_op(std::string_view name) {
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kAvg}) {
    if (reduce_op_name(op) == name) return op;
  }
  throw_error(StatusCode::kInvalidArgument,
              "unknown reduction op '" + std::string(name) + "' (known: sum, prod, min, max, avg)");
}

static_assert(kCollectiveKinds == static_cast<uint8_t>(Collective::kSendRecv),
              "the wire's check of a call signature knows every collective");

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAllToAll:
      return "all_to_all";
    case Collective::kSendRecv:
      return "send_recv";
  }
  return "?";
}

Collective parse_collective(std::string_view name) {
  std::string known;
  for (Collective c : kCollectives) {
    if (collective_name(c) == name) return c;
    known += (known.empty() ? "" : ", ") + std::string(collective_name(c));
  }
  throw_error(StatusCode::kInvalidArgument,
              "unknown collective '" + std::string(name) + "' (known: " + known + ")");
}

bool is_comm_dtype(DType d) {
  return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16 || d == DType::kF64 ||
         d == DType::kI32 || d == DType::kI64;
}

void check_comm_dtype(DType d, const char* argument) {
  if (!is_comm_dtype(d)) {
    throw_error(StatusCode::kInvalidArgument,
                std::string(argument) + ": dtype " + std::string(dtype_name(d)) +
                    " is not supported by collectives (supported: f32, f16, bf16, f64, i32, i64)");
  }
}

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kNone:
      return "none";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kDirect:
      return "direct";
    case Algorithm::kChain:
      return "chain";
    case Algorithm::kPairwise:
      return "pairwise";
  }
  return "?";
}

std::string_view data_path_name(DataPath p) {
  switch (p) {
    case DataPath::kHost:
      return "host";
    case DataPath::kHostStaging:
      return "host_staging";
    case DataPath::kHierarchical:
      return "hierarchical";
    case DataPath::kVendorCcl:
      return "vendor_ccl";
    case DataPath::kGdr:
      return "gdr";
  }
  return "?";
}

UniqueId Communicator::create_unique_id(const CommConfig& config) {
  auto [listener, port] = listen_tcp(config.listen_address, 0);
  std::string address =
      !config.advertise_address.empty() ? config.advertise_address : advertised_host_address();
  std::vector<uint8_t> secret(32);
  random_bytes(secret.data(), secret.size());
  Credentials creds{secret, job_id_for(secret)};
  ByteWriter w;
  w.u32(kUniqueIdMagic);
  w.u16(port);
  w.str(address);
  w.raw(secret.data(), secret.size());
  if (w.bytes().size() > 128) {
    throw_error(StatusCode::kInvalidArgument, "unique id: address '" + address + "' too long");
  }
  UniqueId id;
  copy_bytes(id.bytes.data(), w.bytes().data(), w.bytes().size());
  std::lock_guard<std::mutex> lock(store_mutex());
  id_stores().push_back(
      std::make_unique<StoreServer>(std::move(listener), creds, config.timeout_seconds));
  return id;
}

Communicator::Communicator(const UniqueId& id, int rank, int world, CommConfig config)
    : impl_(std::make_unique<Impl>()) {
  ByteReader r(id.bytes, "unique id");
  if (r.u32("magic") != kUniqueIdMagic) {
    throw_error(StatusCode::kInvalidArgument, "unique id: not a polychip unique id");
  }
  uint16_t port = r.u16("port");
  std::string address = r.str("address", 64);
  std::vector<uint8_t> secret(32);
  r.raw(secret.data(), 32, "secret");
  impl_->config = std::move(config);
  impl_->rank = rank;
  impl_->world = world;
  impl_->reserve_open_files();
  impl_->init(address, port, Credentials{secret, job_id_for(secret)});
}

Communicator::Communicator(const LaunchInfo& launch, CommConfig config)
    : impl_(std::make_unique<Impl>()) {
  impl_->config = std::move(config);
  impl_->rank = launch.rank;
  impl_->world = launch.world;
  // The job id names the launch (not the secret), so a rank with the wrong
  // secret is told exactly that instead of "another job".
  std::string job = "launch|" + launch.launcher + "|" + launch.job_key + "|" +
                    launch.master_address + ":" + std::to_string(launch.master_port);
  Credentials creds{launch.secret, job_id_for(std::vector<uint8_t>(job.begin(), job.end()))};
  impl_->reserve_open_files();
  if (launch.rank == 0) {
    Fd listener;
    try {
      listener = store_listener(launch, impl_->config.listen_address);
    } catch (const Error& e) {
      throw_error(e.code(), "rendezvous store: " + e.message() +
                                (launch.master_port_derived
                                     ? " (the port was derived from the " + launch.launcher +
                                           " job id; set MASTER_PORT to a free port)"
                                     : " (MASTER_PORT)"));
    }
    impl_->store_server =
        std::make_unique<StoreServer>(std::move(listener), creds, impl_->config.timeout_seconds);
  }
  impl_->init(launch.master_address, launch.master_port, creds);
}

std::unique_ptr<Communicator> Communicator::from_environment(CommConfig config) {
  return std::make_unique<Communicator>(detect_launch(), std::move(config));
}

Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->rank; }
int Communicator::size() const { return impl_->world; }
const std::vector<RankInfo>& Communicator::ranks() const { return impl_->ranks; }
int Communicator::island_count() const { return impl_->islands; }
const CommConfig& Communicator::config() const { return impl_->config; }
int Communicator::refused_connections() const { return impl_->transport->refused_connections(); }
const CallRecord& Communicator::last_call() const {
  if (impl_->history.empty()) {
    throw_error(StatusCode::kFailedPrecondition, "last_call: no collective was called yet");
  }
  return impl_->history.back();
}
const std::vector<CallRecord>& Communicator::call_history() const { return impl_->history; }

void Communicator::abort(const std::string& reason) { impl_->transport->abort(reason); }

#define POLYCHIP_COMM_DEFER_IN_GROUP(call)                   \
  if (impl_->group_depth > 0) {                              \
    impl_->group_collectives.push_back([=, this] { call; }); \
    return;                                                  \
  }

void Communicator::all_reduce(BufferRef send, BufferRef recv, uint64_t count, DType dtype,
                              ReduceOp op) {
  POLYCHIP_COMM_DEFER_IN_GROUP(all_reduce(send, recv, count, dtype, op));
  CallRecord& rec = impl_->begin(Collective::kAllReduce, dtype, op, count);
  const uint64_t bytes = rec.bytes;
  const bool hierarchical = impl_->all_reduce_hierarchical;
  if (impl_->gdr && bytes > 0 && !hierarchical &&
      impl_->gdr_collective(GdrCollective::kAllReduce, send, recv, count, dtype, op, rec)) {
    return;
  }
  // Device -> host, network and host -> device overlap, piece by piece.
  using Choice = Impl::Choice;
  const Choice overlap = impl_->staging_overlap;
  auto engine = [](const BufferRef& b) {
    return b.on_device() && b.device()->properties().has(POLYCHIP_CAP_COPY_ENGINE);
  };
  StreamedStaging io(
      impl_->staging, impl_->config.chunk_bytes,
      overlap == Choice::kYes || (overlap == Choice::kAuto && (engine(send) || engine(recv))));
  uint8_t* in = io.input(send, bytes);
  uint8_t* out = io.output(recv, bytes, send.same_memory(recv));
  bool staged = impl_->staging.staged(send) || impl_->staging.staged(recv);
  rec.path = staged ? DataPath::kHostStaging : DataPath::kHost;
  if (bytes > 0) impl_->all_reduce_host(in, out, count, dtype, op, rec, hierarchical, &io);
  io.finish();
  rec.staged_input_pieces = io.input_pieces();
  rec.early_output_bytes = io.early_output_bytes();
}

void Communicator::all_gather(BufferRef send, BufferRef recv, uint64_t send_count, DType dtype) {
  POLYCHIP_COMM_DEFER_IN_GROUP(all_gather(send, recv, send_count, dtype));
  CallRecord& rec = impl_->begin(Collective::kAllGather, dtype, ReduceOp::kSum, send_count);
  const uint64_t bytes = rec.bytes, total = bytes * impl_->world;
  if (impl_->gdr && bytes > 0 &&
      impl_->gdr_collective(GdrCollective::kAllGather, send, recv, send_count, dtype,
                            ReduceOp::kSum, rec)) {
    return;
  }
  std::vector<Staging::Lease> leases;
  uint8_t* out = impl_->staging.output(recv, total, leases);
  const uint8_t* in;
  if (!recv.on_device() && !send.on_device() &&
      static_cast<const uint8_t*>(send.host()) == out + impl_->rank * bytes) {
    in = out + impl_->rank * bytes;  // in place
  } else {
    in = impl_->staging.input(send, bytes, leases);
  }
  rec.path = (impl_->staging.staged(send) || impl_->staging.staged(recv)) ? DataPath::kHostStaging
                                                                          : DataPath::kHost;
  bool direct = impl_->use_direct(total);
  rec.algorithm = impl_->world == 1 ? Algorithm::kNone
                  : direct          ? Algorithm::kDirect
                                    : Algorithm::kRing;
  if (bytes > 0 && direct && impl_->world > 1 && impl_->mail_fits(bytes)) {
    Plan plan = impl_->collective_plan("all_gather");
    plan_direct_all_gather_frames(plan, impl_->whole(), impl_->config.chunk_bytes, in, out, bytes,
                                  impl_->transport->mailbox_peers());
    impl_->transport->run_with_mailboxes(plan, in, bytes, out);
    rec.mailbox = true;
  } else if (bytes > 0) {
    impl_->run_collective(
        "all_gather",
        [&](BuildContext& ctx) {
          return direct ? build_direct_all_gather(ctx, in, out, bytes)
                        : build_ring_all_gather(ctx, in, out, bytes);
        },
        impl_->whole());
  }
  impl_->staging.copy_back(recv, out, total);
}

void Communicator::reduce_scatter(BufferRef send, BufferRef recv, uint64_t recv_count, DType dtype,
                                  ReduceOp op) {
  POLYCHIP_COMM_DEFER_IN_GROUP(reduce_scatter(send, recv, recv_count, dtype, op));
  CallRecord& rec = impl_->begin(Collective::kReduceScatter, dtype, op, recv_count);
  const uint64_t bytes = rec.bytes, total = bytes * impl_->world;
  if (impl_->gdr && bytes > 0 && impl_->world > 1 &&
      impl_->gdr_collective(GdrCollective::kReduceScatter, send, recv, recv_count, dtype, op,
                            rec)) {
    return;
  }
  std::vector<Staging::Lease> leases;
  uint8_t* in = impl_->staging.input(send, total, leases);
  uint8_t* out = impl_->staging.output(recv, bytes, leases);
  rec.path = (impl_->staging.staged(send) || impl_->staging.staged(recv)) ? DataPath::kHostStaging
                                                                          : DataPath::kHost;
  bool direct = impl_->use_direct(total);
  Reduction r{dtype, op, impl_->world};
  if (impl_->world == 1) {
    rec.algorithm = Algorithm::kNone;
    impl_->all_reduce_host(in, out, recv_count, dtype, op, rec, false);
  } else if (bytes > 0) {
    rec.algorithm = direct ? Algorithm::kDirect : Algorithm::kRing;
    // In place (recv = send + rank * bytes, as NCCL defines it) both
    // algorithms read this rank's block before they write it. Any other
    // overlap: work from a copy of the input.
    const bool in_place = out == in + uint64_t(impl_->rank) * bytes;
    if (!in_place && out < in + total && in < out + bytes) {
      impl_->overlapped_input.assign(in, in + total);
      in = impl_->overlapped_input.data();
    }
    impl_->run_collective(
        "reduce_scatter",
        [&](BuildContext& ctx) {
          return direct ? build_direct_reduce_scatter(ctx, in, out, recv_count, r)
                        : build_ring_reduce_scatter(ctx, in, out, recv_count, r);
        },
        impl_->whole());
  }
  impl_->staging.copy_back(recv, out, bytes);
}

void Communicator::broadcast(BufferRef send, BufferRef recv, uint64_t count, DType dtype,
                             int root) {
  POLYCHIP_COMM_DEFER_IN_GROUP(broadcast(send, recv, count, dtype, root));
  impl_->check_root(root);
  CallRecord& rec = impl_->begin(Collective::kBroadcast, dtype, ReduceOp::kSum, count, root);
  const uint64_t bytes = rec.bytes;
  if (impl_->gdr && bytes > 0 && impl_->world > 1 &&
      impl_->gdr_collective(GdrCollective::kBroadcast, send, recv, count, dtype, ReduceOp::kSum,
                            rec, root)) {
    return;
  }
  std::vector<Staging::Lease> leases;
  const bool is_root = impl_->rank == root;
  uint8_t* in = is_root ? impl_->staging.input(send, bytes, leases) : nullptr;
  uint8_t* out =
      (is_root && send.same_memory(recv)) ? in : impl_->staging.output(recv, bytes, leases);
  rec.path = ((is_root && impl_->staging.staged(send)) || impl_->staging.staged(recv))
                 ? DataPath::kHostStaging
                 : DataPath::kHost;
  bool direct = impl_->use_direct(bytes);
  rec.algorithm = impl_->world == 1 ? Algorithm::kNone
                  : direct          ? Algorithm::kDirect
                                    : Algorithm::kChain;
  if (bytes > 0) {
    if (impl_->world == 1) {
      if (out != in) copy_bytes(out, in, bytes);
    } else {
      impl_->run_collective(
          "broadcast",
          [&](BuildContext& ctx) {
            return direct ? build_direct_broadcast(ctx, in, out, bytes, root)
                          : build_chain_broadcast(ctx, in, out, bytes, root);
          },
          impl_->whole());
    }
  }
  impl_->staging.copy_back(recv, out, bytes);
}

void Communicator::reduce(BufferRef send, BufferRef recv, uint64_t count, DType dtype, ReduceOp op,
                          int root) {
  POLYCHIP_COMM_DEFER_IN_GROUP(reduce(send, recv, count, dtype, op, root));
  impl_->check_root(root);
  CallRecord& rec = impl_->begin(Collective::kReduce, dtype, op, count, root);
  if (impl_->gdr && rec.bytes > 0 && impl_->world > 1 &&
      impl_->gdr_collective(GdrCollective::kReduce, send, recv, count, dtype, op, rec, root)) {
    return;
  }
  const uint64_t bytes = rec.bytes;
  std::vector<Staging::Lease> leases;
  const bool is_root = impl_->rank == root;
  uint8_t* in = impl_->staging.input(send, bytes, leases);
  uint8_t* out = nullptr;
  if (is_root) out = send.same_memory(recv) ? in : impl_->staging.output(recv, bytes, leases);
  rec.path = (impl_->staging.staged(send) || (is_root && impl_->staging.staged(recv)))
                 ? DataPath::kHostStaging
                 : DataPath::kHost;
  bool direct = impl_->use_direct(bytes);
  Reduction r{dtype, op, impl_->world};
  if (impl_->world == 1) {
    impl_->all_reduce_host(in, out, count, dtype, op, rec, false);
  } else if (bytes > 0) {
    rec.algorithm = direct ? Algorithm::kDirect : Algorithm::kChain;
    impl_->run_collective(
        "reduce",
        [&](BuildContext& ctx) {
          return direct ? build_direct_reduce(ctx, in, out, count, r, root)
                        : build_chain_reduce(ctx, in, out, count, r, root);
        },
        impl_->whole());
  }
  if (is_root) impl_->staging.copy_back(recv, out, bytes);
}

void Communicator::all_to_all(BufferRef send, BufferRef recv, uint64_t count, DType dtype) {
  POLYCHIP_COMM_DEFER_IN_GROUP(all_to_all(send, recv, count, dtype));
  CallRecord& rec = impl_->begin(Collective::kAllToAll, dtype, ReduceOp::kSum, count);
  const uint64_t block = rec.bytes, total = block * impl_->world;
  std::vector<Staging::Lease> leases;
  uint8_t* in = impl_->staging.input(send, total, leases);
  uint8_t* out = send.same_memory(recv) ? in : impl_->staging.output(recv, total, leases);
  rec.path = (impl_->staging.staged(send) || impl_->staging.staged(recv)) ? DataPath::kHostStaging
                                                                          : DataPath::kHost;
  rec.algorithm = impl_->world == 1 ? Algorithm::kNone : Algorithm::kPairwise;
  if (block > 0) {
    impl_->run_collective(
        "all_to_all", [&](BuildContext& ctx) { return build_all_to_all(ctx, in, out, block); },
        impl_->whole());
  }
  impl_->staging.copy_back(recv, out, total);
}

void Communicator::send(BufferRef data, uint64_t count, DType dtype, int peer) {
  impl_->check_peer(peer);
  check_comm_dtype(dtype, "dtype");
  Impl::P2P op{true, data, count, dtype, peer};
  if (impl_->group_depth > 0) {
    impl_->group_p2p.push_back(op);
    return;
  }
  CallRecord& rec = impl_->begin("send", dtype, ReduceOp::kSum, count);
  rec.algorithm = Algorithm::kPairwise;
  rec.path = impl_->staging.staged(data) ? DataPath::kHostStaging : DataPath::kHost;
  impl_->p2p({op});
}

void Communicator::recv(BufferRef data, uint64_t count, DType dtype, int peer) {
  impl_->check_peer(peer);
  check_comm_dtype(dtype, "dtype");
  Impl::P2P op{false, data, count, dtype, peer};
  if (impl_->group_depth > 0) {
    impl_->group_p2p.push_back(op);
    return;
  }
  CallRecord& rec = impl_->begin("recv", dtype, ReduceOp::kSum, count);
  rec.algorithm = Algorithm::kPairwise;
  rec.path = impl_->staging.staged(data) ? DataPath::kHostStaging : DataPath::kHost;
  impl_->p2p({op});
}

void Communicator::barrier() {
  int32_t token = 0, result = 0;
  all_reduce(&token, &result, 1, DType::kI32, ReduceOp::kSum);
  impl_->history.back().collective = "barrier";
}

void Communicator::group_start() { ++impl_->group_depth; }

void Communicator::group_end() {
  if (impl_->group_depth == 0) {
    throw_error(StatusCode::kFailedPrecondition, "group_end without group_start");
  }
  if (--impl_->group_depth > 0) return;
  auto ops = std::move(impl_->group_p2p);
  auto collectives = std::move(impl_->group_collectives);
  impl_->group_p2p.clear();
  impl_->group_collectives.clear();
  if (!ops.empty()) {
    uint64_t count = 0;
    for (auto& o : ops) count += o.count;
    CallRecord& rec = impl_->begin("group_send_recv", ops.front().dtype, ReduceOp::kSum, 0);
    rec.count = count;
    rec.algorithm = Algorithm::kPairwise;
    const bool staged = std::any_of(
        ops.begin(), ops.end(), [&](const Impl::P2P& o) { return impl_->staging.staged(o.data); });
    rec.path = staged ? DataPath::kHostStaging : DataPath::kHost;
    impl_->p2p(ops);
  }
  for (auto& c : collectives) c();
}

}  // namespace polychip::comm
