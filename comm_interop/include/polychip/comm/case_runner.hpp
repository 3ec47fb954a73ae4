// One collective case, nccl-tests style: inputs built so the expected
// output is exact, the result compared bit for bit on every rank (#wrong),
// then timed. Shared by `polychip comm-perf`, the `comm` conformance suite
// and the tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "polychip/comm/communicator.hpp"

namespace polychip::comm {

// all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, send_recv.
const std::vector<std::string>& collective_names();
// busbw / algbw, as nccl-tests defines it.
double bus_bandwidth_factor(const std::string& collective, int ranks);

struct CaseSpec {
  std::string collective = "all_reduce";
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;
  uint64_t bytes = 0;  // nccl-tests "size": the larger of the send/recv totals
  int root = 0;
  bool in_place = false;
  // Every buffer starts this many bytes into its allocation (a multiple of
  // the element size): off every alignment above it.
  uint64_t offset = 0;
};

struct CaseResult {
  uint64_t count = 0;  // nccl-tests "count" (elements of the larger buffer)
  uint64_t wrong = 0;  // this rank's mismatched elements, plus guard bytes written
  // Of `wrong`: the guard bytes before or after a buffer that were written.
  uint64_t outside = 0;
  double seconds = 0;  // per iteration, this rank
  CallRecord record;   // of the verified call
};

class CaseRunner {
 public:
  // device == nullptr: host memory; otherwise buffers live on that device.
  CaseRunner(Communicator& comm, const Device* device);
  // Verifies once (fresh inputs), then times `iterations` after `warmup`.
  CaseResult run(const CaseSpec& spec, int warmup, int iterations);
  // Rounds `bytes` down to what the collective can split evenly over ranks.
  uint64_t round_size(const std::string& collective, DType dtype, uint64_t bytes) const;

 private:
  Communicator& comm_;
  const Device* device_;
};

}  // namespace polychip::comm
