// polychip's collectives, NCCL-shaped. Every rank of a communicator calls the
// same collectives in the same order; results are bitwise identical on
// every rank whatever its vendor and whatever the timing, because the
// reduction order is fixed by the algorithm. Buffers are host pointers or
// device memory of any adapter (staged through the host when the adapter's
// memory is not host visible). Errors throw polychip::Error; after a
// failure (timeout, lost peer, corruption, abort) the communicator stays
// failed and every later call throws at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "polychip/comm/bootstrap.hpp"
#include "polychip/comm/buffer_ref.hpp"
#include "polychip/comm/config.hpp"
#include "polychip/comm/types.hpp"

namespace polychip::comm {

struct RankInfo {
  int rank = 0;
  std::string host;
  std::string address;
  uint16_t port = 0;
  std::string device_type;
  std::string vendor;
  int island = 0;  // ranks with the same device type share an island
};

class Communicator {
 public:
  // Creates the id and starts its rendezvous store in this process (which
  // must stay alive until every rank joined).
  static UniqueId create_unique_id(const CommConfig& config = CommConfig::from_environment());
  Communicator(const UniqueId& id, int rank, int world,
               CommConfig config = CommConfig::from_environment());
  // Ranks and rendezvous from the launcher's environment (detect_launch).
  static std::unique_ptr<Communicator> from_environment(
      CommConfig config = CommConfig::from_environment());
  Communicator(const LaunchInfo& launch, CommConfig config);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  const std::vector<RankInfo>& ranks() const;
  int island_count() const;
  const CommConfig& config() const;
  // Connections dropped during setup because they failed authentication.
  int refused_connections() const;

  // Counts are in elements of `dtype`. In-place when send == recv (for
  // all_gather: send == recv + rank * count; reduce_scatter: send + rank *
  // recv_count == recv).
  void all_reduce(BufferRef send, BufferRef recv, uint64_t count, DType dtype, ReduceOp op);
  void all_gather(BufferRef send, BufferRef recv, uint64_t send_count, DType dtype);
  void reduce_scatter(BufferRef send, BufferRef recv, uint64_t recv_count, DType dtype,
                      ReduceOp op);
  void broadcast(BufferRef send, BufferRef recv, uint64_t count, DType dtype, int root);
  // recv is written on the root only.
  void reduce(BufferRef send, BufferRef recv, uint64_t count, DType dtype, ReduceOp op, int root);
  // send and recv hold size() blocks of `count` elements; block j goes to rank j.
  void all_to_all(BufferRef send, BufferRef recv, uint64_t count, DType dtype);
  void send(BufferRef data, uint64_t count, DType dtype, int peer);
  void recv(BufferRef data, uint64_t count, DType dtype, int peer);
  void barrier();

  // Between group_start() and group_end(), send/recv calls are collected and
  // progressed together (so paired exchanges cannot deadlock); collectives
  // called inside a group run, in order, after the group's sends/recvs.
  void group_start();
  void group_end();

  // Thread-safe. Makes the running and every later operation throw ABORTED,
  // and tells every peer (they fail with this reason instead of waiting for
  // their timeout).
  void abort(const std::string& reason = "abort requested");

  // What the last call did: algorithm, path, transport. call_history()
  // holds the most recent calls, oldest first: at least the last 1024 (the
  // seq of each says where it stands among all calls).
  const CallRecord& last_call() const;
  const std::vector<CallRecord>& call_history() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace polychip::comm
