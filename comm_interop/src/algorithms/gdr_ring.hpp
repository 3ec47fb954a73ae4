// Ring all-reduce on the GDR path: the chunks move by one-sided writes
// from one rank's device memory into the next rank's (transport/rdma/
// gdr_endpoint.hpp), and each partial sum is added on the device that
// receives it, by its own `add` kernel (the op contract's). No host copy on
// any rank.
//
//   reduce-scatter, step s = 0 .. n-2: write chunk (p - s) (from the input
//     at s = 0, else the output) into next's scratch; when prev's step s
//     landed, out[c] = in[c] + scratch[c] for c = p - s - 1, on the device.
//   credit: once this rank's reduce-scatter is over, tell prev that its
//     all-gather writes may land in this rank's output.
//   all-gather, step s = 0 .. n-2: write final chunk (p + 1 - s) into
//     next's output, after next's credit (s = 0) or prev's step s - 1.
//
// Every final chunk is computed once, on one rank, and copied: the result
// is bitwise identical on every rank. The reduction runs in the buffers'
// dtype (the device's add), not in a wider accumulator as the host path
// does for f16/bf16.
#pragma once

#include <cstdint>
#include <deque>
#include <set>
#include <string>

#include "polychip/comm/buffer_ref.hpp"
#include "polychip/dtype.hpp"
#include "polychip/memory.hpp"
#include "transport/rdma/gdr_endpoint.hpp"

namespace polychip::comm {

struct GdrRingArgs {
  int rank = 0, world = 1;
  uint64_t seq = 0;  // the collective's sequence number (checks every notice)
  DType dtype = DType::kF32;
  uint64_t count = 0;  // elements, >= world
  BufferRef send{static_cast<void*>(nullptr)}, recv{static_cast<void*>(nullptr)};
  void* send_local = nullptr;  // registered addresses of send and recv
  void* recv_local = nullptr;
  const Buffer* scratch = nullptr;  // this rank's, >= count elements
  CallOffer next;                   // where this rank writes data
  CallOffer prev;                   // where it writes its credit
  const Stream* stream = nullptr;   // the device's, for the add kernel
};

class GdrRingAllReduce {
 public:
  GdrRingAllReduce(GdrEndpoint& endpoint, GdrRingArgs args);
  // The transport calls this every turn (Plan::set_progress): true once the
  // result is in `recv` and every write this rank posted has completed.
  bool progress(bool* moved);

 private:
  enum class Phase { kReduceScatter, kCredit, kAllGather, kFinish };
  enum Kind : uint32_t { kScatterData = 1, kGatherData = 2, kCredit = 3 };
  uint64_t immediate(Kind kind, uint32_t step) const;
  bool arrived(Kind kind, uint32_t step) const { return arrived_.count({kind, step}) > 0; }
  void take_notices();
  bool writes_done();
  // false: the provider's queue is full; try again next turn.
  bool post(const void* local, uint64_t bytes, const RemoteRegion& remote, uint64_t offset,
            Kind kind, uint32_t step);
  uint64_t chunk_offset(int chunk) const;  // in elements
  uint64_t chunk_count(int chunk) const;
  void add_chunk(int chunk);

  GdrEndpoint& endpoint_;
  GdrRingArgs a_;
  size_t element_ = 0;
  int next_ = 0, prev_ = 0;
  Phase phase_ = Phase::kReduceScatter;
  int step_ = 0;
  bool posted_ = false;
  std::set<std::pair<uint32_t, uint32_t>> arrived_;  // (kind, step)
  std::deque<WriteCompletion> writes_;
};

}  // namespace polychip::comm
