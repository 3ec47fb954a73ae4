// How an adapter offers its vendor collective library (NCCL, RCCL, HCCL,
// ...) inside an island of ranks that share its device type. polychip then
// runs heterogeneous all-reduce as FlagCX does: the vendor CCL reduces to
// the island leader, polychip's own algorithm exchanges between leaders
// over TCP, the vendor CCL broadcasts back. Nothing here loads a vendor
// library: the CUDA adapter registers an NCCL-backed factory (dlopen) later.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "polychip/comm/buffer_ref.hpp"
#include "polychip/comm/types.hpp"

namespace polychip::comm {

struct IslandContext {
  std::string device_type;
  std::vector<int> global_ranks;  // members, leader first
  int my_position = 0;
};

class IslandCollectives {
 public:
  virtual ~IslandCollectives() = default;
  virtual std::string name() const = 0;  // "nccl", ... (recorded per call)
  // Partial (un-finalised) reduction to `root`: f16/bf16 inputs yield f32
  // accumulators in `recv`; kAvg reduces as kSum (the caller divides).
  virtual void reduce(BufferRef send, BufferRef recv, uint64_t count, DType dtype, ReduceOp op,
                      int root) = 0;
  virtual void broadcast(BufferRef buffer, uint64_t bytes, int root) = 0;
};

using IslandCclFactory =
    std::function<std::unique_ptr<IslandCollectives>(const IslandContext& context)>;

// Register for device types starting with `device_type_prefix` ("nvidia.").
// Returns false when that prefix already has a factory.
bool register_island_ccl(const std::string& device_type_prefix, IslandCclFactory factory);
// nullptr when no factory matches.
std::unique_ptr<IslandCollectives> make_island_ccl(const IslandContext& context);

}  // namespace polychip::comm
