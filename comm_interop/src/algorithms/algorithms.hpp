// Plan builders for each collective on host memory. A Group is an ordered
// list of global ranks; algorithms run over any group (the whole
// communicator, one island, or the island leaders). Reduction orders are
// fixed by the group order, never by timing:
//  - ring: segment k is reduced along the ring ending at its owner, then
//    its final bits are all-gathered;
//  - direct: every rank receives every input and folds them in group order;
//  - chain: partials flow along the group towards the root.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/plan.hpp"
#include "polychip/comm/types.hpp"

namespace polychip::comm {

struct Group {
  std::vector<int> ranks;  // global ranks, in reduction order
  int me = 0;              // my position in `ranks`
  int size() const { return static_cast<int>(ranks.size()); }
};

// What to reduce: the dtype the caller's buffers hold, the op, and whether
// results are final (apply avg division by `avg_ranks`, round f32
// accumulators to f16/bf16) or stay partial accumulators.
struct Reduction {
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;
  int avg_ranks = 1;
};

struct Scratch {
  // Grows on demand; reused across calls.
  uint8_t* get(size_t index, uint64_t bytes);
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<const uint8_t*> inputs_in_order;  // a fold's operands
};

struct BuildContext {
  Plan* plan;
  Group group;
  uint64_t chunk_bytes;
  Scratch* scratch;
  // Builders that know when a range of `recv` holds its final bits report
  // it here (staged output then goes back to the device at once); may be
  // empty. Builders that read `send` while building call wait_input first.
  std::function<void(const uint8_t*, uint64_t)> output_final;
  std::function<void()> wait_input;
  void input_needed() const {
    if (wait_input) wait_input();
  }
};

// Each builder adds tasks to ctx.plan; `finish` work that needs every
// receive (rank-order folds) is returned as a callback run after the plan.
using Finish = std::function<void()>;

// recv (dtype) = op over group of send (dtype). count elements.
Finish build_ring_all_reduce(BuildContext& ctx, const void* send, void* recv, uint64_t count,
                             const Reduction& r);
Finish build_direct_all_reduce(BuildContext& ctx, const void* send, void* recv, uint64_t count,
                               const Reduction& r);
// The direct all-reduce with the inputs of some peers delivered another way
// (the transport's shared-memory mailboxes): frames only to and from the
// group members whose `mailed` entry (by global rank) is false. Returns
// where every member's input goes (group position j at j * bytes); after
// the plan and the mail, reduce_gathered_inputs() folds them.
uint8_t* plan_direct_all_reduce_frames(Plan& plan, const Group& group, uint64_t chunk_bytes,
                                       Scratch& scratch, const void* send, uint64_t bytes,
                                       const std::vector<bool>& mailed);
// The direct all-gather in the same way: this rank's part into its place
// in `recv`, frames only with the members whose `mailed` entry is false
// (the mail puts the others' parts in place).
void plan_direct_all_gather_frames(Plan& plan, const Group& group, uint64_t chunk_bytes,
                                   const void* send, void* recv, uint64_t send_bytes,
                                   const std::vector<bool>& mailed);
// recv = the rank-order fold of the gathered inputs (`send` stands for this
// rank's own): the direct all-reduce's finish.
void reduce_gathered_inputs(const Group& group, const uint8_t* gathered, const void* send,
                            void* recv, uint64_t count, const Reduction& r, Scratch& scratch);
Finish build_ring_reduce_scatter(BuildContext& ctx, const void* send, void* recv,
                                 uint64_t recv_count, const Reduction& r);
Finish build_direct_reduce_scatter(BuildContext& ctx, const void* send, void* recv,
                                   uint64_t recv_count, const Reduction& r);
Finish build_ring_all_gather(BuildContext& ctx, const void* send, void* recv, uint64_t send_bytes);
Finish build_direct_all_gather(BuildContext& ctx, const void* send, void* recv,
                               uint64_t send_bytes);
// root is a position in the group.
Finish build_chain_broadcast(BuildContext& ctx, const void* send, void* recv, uint64_t bytes,
                             int root);
Finish build_direct_broadcast(BuildContext& ctx, const void* send, void* recv, uint64_t bytes,
                              int root);
// With `final_result` false the root receives accumulators (acc type) and
// no avg division happens.
Finish build_chain_reduce(BuildContext& ctx, const void* send, void* recv, uint64_t count,
                          const Reduction& r, int root, bool final_result = true);
Finish build_direct_reduce(BuildContext& ctx, const void* send, void* recv, uint64_t count,
                           const Reduction& r, int root, bool final_result = true);
Finish build_all_to_all(BuildContext& ctx, const void* send, void* recv, uint64_t block_bytes);

}  // namespace polychip::comm
