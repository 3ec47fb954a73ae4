// Rings on the GDR path: chunks move by one-sided writes from one rank's
// device memory into the next rank's (transport/rdma/gdr_endpoint.hpp), and
// each partial sum is added on the device that receives it, by its own
// `add` kernel (the op contract's). No host copy on any rank.
//
// All-reduce:
//   reduce-scatter, step s = 0 .. n-2: write chunk (p - s) (from the input
//     at s = 0, else the output) into next's scratch; when prev's step s
//     landed, out[c] = in[c] + scratch[c] for c = p - s - 1, on the device.
//   credit: once this rank's reduce-scatter is over, tell prev that its
//     all-gather writes may land in this rank's output.
//   all-gather, step s = 0 .. n-2: write final chunk (p + 1 - s) into
//     next's output, after next's credit (s = 0) or prev's step s - 1.
// Reduce-scatter (block r of the output is rank r's): the reduce-scatter
//   phase alone, shifted by one block so that the chunk a rank adds last is
//   its own: step s writes block (p - s - 1) (from the input at s = 0, else
//   from the running sums) into next's scratch; the add of block (p - s - 2)
//   goes into the running sums (the second half of the scratch), the last
//   one, block p, into the output. No credit: the next call's offers, which
//   every rank sends only once this call is over here, guard the scratch.
// All-gather (block r of the output is rank r's input): the all-gather
//   phase alone, block (p - s) at step s, from the input at s = 0; prev
//   writes only blocks this rank does not write itself, so no credit.
// Broadcast: a chain from the root along the ring: the root writes its
//   input slice by slice into next's output; every other rank but the last
//   (root - 1) writes each slice on into its next's as soon as it landed.
//
// Reduce: a chain along the ring that ends at the root: root + 1 writes its
//   input slice by slice into next's scratch; every later rank adds its
//   input to each slice that landed (into its running sums, the root into
//   its output) and writes the sum on.
//
// Each chunk moves in slices of about `slice_bytes` (at most 256 per chunk,
// which also keeps every write under a provider's message-size limit): a
// slice is written on as soon as it was added, so writes and adds overlap.
//
// Every final chunk is computed once, on one rank, and copied: the result
// is bitwise identical on every rank. The reduction runs in the buffers'
// dtype (the device's add), not in a wider accumulator as the host path
// does for f16/bf16.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "polychip/comm/buffer_ref.hpp"
#include "polychip/dtype.hpp"
#include "polychip/memory.hpp"
#include "transport/rdma/gdr_endpoint.hpp"

namespace polychip::comm {

enum class GdrCollective { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce };

struct GdrRingArgs {
  GdrCollective collective = GdrCollective::kAllReduce;
  int rank = 0, world = 1;
  uint64_t seq = 0;  // the collective's sequence number (checks every notice)
  DType dtype = DType::kF32;
  uint64_t count = 0;  // elements: all-reduce >= world; the others per rank, >= 1
  int root = 0;        // broadcast and reduce
  uint64_t slice_bytes = 1 << 20;
  BufferRef send{static_cast<void*>(nullptr)}, recv{static_cast<void*>(nullptr)};
  void* send_local = nullptr;  // registered addresses of send and recv
  void* recv_local = nullptr;
  // All-reduce: this rank's, >= count elements; reduce-scatter: 2 * world *
  // count (incoming blocks, then running sums), reduce: 2 * count, both
  // read locally at scratch_local.
  const Buffer* scratch = nullptr;
  void* scratch_local = nullptr;
  CallOffer next;                  // where this rank writes data
  CallOffer prev;                  // where it writes its credit
  const Stream* stream = nullptr;  // the device's, for the add kernel
};

class GdrRing {
 public:
  GdrRing(GdrEndpoint& endpoint, GdrRingArgs args);
  // A ring that ends early (an error) leaves its writes to the endpoint.
  ~GdrRing();
  GdrRing(const GdrRing&) = delete;
  GdrRing& operator=(const GdrRing&) = delete;
  // The transport calls this every turn (Plan::set_progress): true once the
  // result is in `recv` and every write this rank posted has completed.
  bool progress(bool* moved);

 private:
  enum Kind : uint32_t { kScatterData = 1, kGatherData = 2, kCredit = 3 };
  uint64_t immediate(Kind kind, uint32_t step, uint32_t slice) const;
  void take_notices();
  bool writes_done();
  // false: the provider's queue is full; try again next turn.
  bool post(const void* local, uint64_t bytes, const RemoteRegion& remote, uint64_t offset,
            Kind kind, uint32_t step, uint32_t slice);
  // Slice `slice` of chunk `chunk`: first element and count.
  std::pair<uint64_t, uint64_t> slice_of(int chunk, uint32_t slice) const;
  // out = in + what landed in the scratch, for one slice: into the output
  // (at the chunk's place, less `output_origin` elements), else into the
  // running sums.
  void add_slice(int chunk, uint32_t slice, bool into_output, uint64_t output_origin = 0);
  // Reduce-scatter and reduce: where the running sums start in the scratch.
  uint64_t running_sums_offset() const {
    const uint64_t blocks = a_.collective == GdrCollective::kReduce ? 1 : a_.world;
    return blocks * a_.count * element_;
  }
  // Posts the data write number `index` (step * slices + slice) of a phase.
  bool post_data(Kind kind, uint64_t index);
  bool progress_broadcast(bool* moved);
  bool progress_reduce(bool* moved);

  GdrEndpoint& endpoint_;
  GdrRingArgs a_;
  bool scatters_ = false, gathers_ = false;  // which phases the collective has
  int shift_ = 0;  // reduce-scatter: blocks move one rank later than all-reduce's chunks
  size_t element_ = 0;
  int next_ = 0, prev_ = 0;
  uint32_t slices_ = 1;            // per chunk
  uint64_t writes_per_phase_ = 0;  // (world - 1) * slices_
  // Progress through each phase, in write order (step-major).
  uint64_t scatter_posted_ = 0, scatter_added_ = 0, gather_posted_ = 0;
  bool credit_posted_ = false, credit_arrived_ = false;
  // Notices that arrived, per phase, by write index.
  std::vector<bool> scatter_arrived_, gather_arrived_;
  std::deque<WriteCompletion> writes_;
};

}  // namespace polychip::comm
