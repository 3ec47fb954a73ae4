// Vocabulary of polychip's collectives: reduction ops, which path and
// transport a call took (recorded per call), supported dtypes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "polychip/dtype.hpp"

namespace polychip::comm {

enum class ReduceOp : int32_t { kSum = 0, kProd = 1, kMin = 2, kMax = 3, kAvg = 4 };

std::string_view reduce_op_name(ReduceOp op);  // "sum", "prod", ...
// Throws INVALID_ARGUMENT naming the known ops.
ReduceOp parse_reduce_op(std::string_view name);

// The collectives, numbered as their calls are on the wire
// (CallSignature::collective; 0 there: not a collective frame).
enum class Collective : uint8_t {
  kAllReduce = 1,
  kAllGather = 2,
  kReduceScatter = 3,
  kBroadcast = 4,
  kReduce = 5,
  kAllToAll = 6,
  kSendRecv = 7  // a group of one send and one recv per rank (comm-perf, the suite)
};
inline constexpr Collective kCollectives[] = {Collective::kAllReduce,     Collective::kAllGather,
                                              Collective::kReduceScatter, Collective::kBroadcast,
                                              Collective::kReduce,        Collective::kAllToAll,
                                              Collective::kSendRecv};
std::string_view collective_name(Collective c);  // "all_reduce", ...
// Throws INVALID_ARGUMENT naming the known collectives.
Collective parse_collective(std::string_view name);

// f32, f16, bf16, f64, i32, i64.
bool is_comm_dtype(DType dtype);
// Throws INVALID_ARGUMENT naming the dtype and the supported ones.
void check_comm_dtype(DType dtype, const char* argument);

// Which algorithm moved the bytes.
enum class Algorithm : int32_t {
  kNone = 0,     // nothing to move (0 bytes or one rank)
  kRing = 1,     // chunked, pipelined ring (bandwidth)
  kDirect = 2,   // one message to/from every peer, fixed rank-order reduction (latency)
  kChain = 3,    // pipelined chain (broadcast / reduce, large)
  kPairwise = 4  // all-to-all and send/recv
};
std::string_view algorithm_name(Algorithm a);

// How device memory met the network.
enum class DataPath : int32_t {
  kHost = 0,          // host memory given by the caller
  kHostStaging = 1,   // device -> host staging -> TCP -> host -> device
  kHierarchical = 2,  // intra-island reduce, inter-island exchange, intra-island broadcast
  kVendorCcl = 3,     // the island's vendor CCL did everything (one island)
  kGdr = 4,           // device memory written by the NIC directly, reduced on the device
};
std::string_view data_path_name(DataPath p);

struct CallRecord {
  uint64_t seq = 0;
  std::string collective;  // "all_reduce", ...
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;
  uint64_t count = 0;
  int root = -1;       // broadcast and reduce; -1 for the others
  uint64_t bytes = 0;  // per-rank payload the caller handed in
  Algorithm algorithm = Algorithm::kNone;
  DataPath path = DataPath::kHost;
  // "shm" (shared-memory links to every peer), "tcp", or "shm+tcp" (some
  // of each), then "+crc32c" with checksums; "local" for a single rank.
  std::string transport;
  // A small all-reduce or all-gather whose inputs went to and from the
  // shared-memory peers through the rings' mailboxes (no frames): the
  // latency path.
  bool mailbox = false;
  // Host staging overlap (all-reduce): input pieces copied device -> host
  // asynchronously, and result bytes queued host -> device while the
  // collective was still running.
  uint64_t staged_input_pieces = 0;
  uint64_t early_output_bytes = 0;
  // Payload bytes RDMA peers wrote straight into this rank's buffers (or
  // staging), none copied out of a ring (docs/comm.md "Placements").
  uint64_t placed_bytes = 0;
};

}  // namespace polychip::comm
