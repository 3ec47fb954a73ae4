#include "algorithms/algorithms.hpp"
#include "wire/byte_io.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "polychip/error.hpp"

namespace polychip::comm {
namespace {

// Step ids carry the algorithm, so ranks that disagree on it (for example
// different POLYCHIP_COMM_ALGO) fail with a protocol error instead of
// mixing data.
constexpr uint32_t kRingReduceStep = 0;
constexpr uint32_t kRingGatherStep = 100000;
constexpr uint32_t kDirectStep = 200000;
constexpr uint32_t kChainStep = 300000;
constexpr uint32_t kAllToAllStep = 400000;
constexpr uint32_t kRingReduceScatterStep = 500000;
constexpr uint32_t kRingAllGatherStep = 600000;
constexpr uint32_t kDirectBroadcastStep = 700000;
constexpr uint32_t kDirectReduceStep = 800000;
constexpr uint32_t kDirectReduceScatterStep = 900000;
constexpr uint32_t kDirectAllGatherStep = 1000000;

int mod(int a, int n) { return ((a % n) + n) % n; }

// Elements [begin, end) of part k when `count` is split into `parts`.
uint64_t part_begin(uint64_t count, int parts, int k) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(count) * k) / parts);
}

uint32_t chunks_for(uint64_t max_part_bytes, uint64_t chunk_bytes) {
  uint64_t c = (max_part_bytes + chunk_bytes - 1) / std::max<uint64_t>(chunk_bytes, 1);
  return static_cast<uint32_t>(std::max<uint64_t>(c, 1));
}

// Offset and length of chunk c when the `length` units from `begin` are
// split into `chunks`.
std::pair<uint64_t, uint64_t> chunk_of(uint64_t begin, uint64_t length, uint32_t chunks,
                                       uint32_t c) {
  const uint64_t cb = part_begin(length, static_cast<int>(chunks), static_cast<int>(c));
  const uint64_t ce = part_begin(length, static_cast<int>(chunks), static_cast<int>(c) + 1);
  return {begin + cb, ce - cb};
}

// The n - 1 steps of one pass around a ring, chunk by chunk: `step(s, c)`
// adds step s's send and receive of chunk c and returns both tasks; the send
// waits for the same chunk's receive in the step before (`previous`, carried
// from one pass into the next), so chunks pipeline through the ring.
template <typename StepFn>
void ring_pass(Plan& plan, int n, uint32_t chunks, std::vector<int>& previous, StepFn step) {
  std::vector<int> current(chunks, -1);
  for (int s = 0; s < n - 1; ++s) {
    for (uint32_t c = 0; c < chunks; ++c) {
      const auto [send, receive] = step(s, c);
      plan.after(send, previous[c]);
      current[c] = receive;
    }
    std::swap(previous, current);
  }
}

// Frames of at most chunk_bytes covering `bytes` (at least one frame).
struct Frames {
  uint64_t bytes, chunk;
  uint32_t count() const {
    return bytes == 0 ? 1 : static_cast<uint32_t>((bytes + chunk - 1) / chunk);
  }
  uint64_t offset(uint32_t c) const { return uint64_t{c} * chunk; }
  uint64_t length(uint32_t c) const { return std::min(chunk, bytes - offset(c)); }
};

void send_frames(Plan& plan, int peer, uint32_t step, const uint8_t* src, Frames f) {
  for (uint32_t c = 0; c < f.count(); ++c) plan.send(peer, step, c, src + f.offset(c), f.length(c));
}
void recv_frames(Plan& plan, int peer, uint32_t step, uint8_t* dst, Frames f) {
  for (uint32_t c = 0; c < f.count(); ++c) plan.recv(peer, step, c, dst + f.offset(c), f.length(c));
}

// A broadcast root's own copy (out of place), chunk c once its frame to one
// peer is sent: the copies fill the time the root waits for the peer to take
// its bytes, instead of a whole-buffer copy before the first frame leaves.
void copy_once_sent(Plan& plan, int send_task, const uint8_t* in, uint8_t* out, Frames f,
                    uint32_t c) {
  if (out == in || out == nullptr) return;
  plan.on_complete(send_task,
                   [=] { copy_bytes(out + f.offset(c), in + f.offset(c), f.length(c)); });
}

// acc (A-typed, count) = fold of inputs[0..n) in order; inputs are D-typed.
void fold_in_order(const std::vector<const uint8_t*>& inputs, DType dtype, ReduceOp op,
                   uint64_t count, uint8_t* acc) {
  DType a = accumulation_type(dtype);
  ReduceFn fn = reduce_function(a, op);
  if (a != dtype) {
    std::vector<float> widened(count);
    widen_to_f32(inputs[0], dtype, reinterpret_cast<float*>(acc), count);
    for (size_t j = 1; j < inputs.size(); ++j) {
      widen_to_f32(inputs[j], dtype, widened.data(), count);
      fn(acc, acc, widened.data(), count);
    }
  } else {
    copy_bytes(acc, inputs[0], count * dtype_size(dtype));
    for (size_t j = 1; j < inputs.size(); ++j) fn(acc, acc, inputs[j], count);
  }
}

}  // namespace

uint8_t* Scratch::get(size_t index, uint64_t bytes) {
  if (buffers.size() <= index) buffers.resize(index + 1);
  if (buffers[index].size() < bytes) {
    buffers[index].clear();
    buffers[index].shrink_to_fit();
    buffers[index].resize(bytes);
  }
  return buffers[index].data();
}

Finish build_ring_all_reduce(BuildContext& ctx, const void* send, void* recv, uint64_t count,
                             const Reduction& r) {
  Plan& plan = *ctx.plan;
  const int n = ctx.group.size(), p = ctx.group.me;
  const DType D = r.dtype, A = accumulation_type(D);
  const size_t a = dtype_size(A), d = dtype_size(D);
  const auto* in = static_cast<const uint8_t*>(send);
  auto* out = static_cast<uint8_t*>(recv);
  uint8_t* acc = out;
  const uint8_t* in_a = in;
  if (A != D) {
    ctx.input_needed();
    acc = ctx.scratch->get(0, count * a);
    widen_to_f32(in, D, reinterpret_cast<float*>(acc), count);
    in_a = acc;
  }
  const ReduceFn fn = reduce_function(A, r.op);
  const int right = ctx.group.ranks[mod(p + 1, n)], left = ctx.group.ranks[mod(p - 1, n)];
  uint64_t max_seg = 0;
  for (int k = 0; k < n; ++k) {
    max_seg = std::max(max_seg, part_begin(count, n, k + 1) - part_begin(count, n, k));
  }
  const uint32_t C = chunks_for(max_seg * a, ctx.chunk_bytes);
  // Element offset and length of chunk c of segment k.
  auto chunk = [&](int k, uint32_t c) {
    const uint64_t b = part_begin(count, n, k);
    return chunk_of(b, part_begin(count, n, k + 1) - b, C, c);
  };
  std::vector<int> previous(C, -1);
  ring_pass(plan, n, C, previous, [&](int s, uint32_t c) {
    auto [so, sl] = chunk(mod(p - s, n), c);
    int st = plan.send(right, kRingReduceStep + s, c, (s == 0 ? in_a : acc) + so * a, sl * a);
    auto [ro, rl] = chunk(mod(p - s - 1, n), c);
    int rt =
        plan.recv_reduce(left, kRingReduceStep + s, c, acc + ro * a, in_a + ro * a, rl * a, fn, a);
    if (s == n - 2) {
      plan.on_complete(rt, [=, mark = ctx.output_final] {
        finalize_reduction(acc + ro * a, A, out + ro * d, D, rl, r.op, r.avg_ranks);
        if (mark && rl > 0) mark(out + ro * d, rl * d);
      });
    }
    return std::pair{st, rt};
  });
  ring_pass(plan, n, C, previous, [&](int t, uint32_t c) {
    auto [so, sl] = chunk(mod(p + 1 - t, n), c);
    int st = plan.send(right, kRingGatherStep + t, c, out + so * d, sl * d);
    auto [ro, rl] = chunk(mod(p - t, n), c);
    int rt = plan.recv(left, kRingGatherStep + t, c, out + ro * d, rl * d);
    if (ctx.output_final && rl > 0) {
      plan.on_complete(rt,
                       [out, ro, rl, d, mark = ctx.output_final] { mark(out + ro * d, rl * d); });
    }
    return std::pair{st, rt};
  });
  return {};
}

namespace {

// Every member's `bytes` to every other: this rank's from `send`, member j's
// into `inputs` + j * bytes; no frames with the members whose `mailed`
// entry (by global rank) is true.
void plan_direct_exchange(Plan& plan, const Group& group, uint64_t chunk_bytes, uint32_t step,
                          const uint8_t* send, uint64_t bytes, const std::vector<bool>& mailed,
                          uint8_t* inputs) {
  const int n = group.size(), p = group.me;
  Frames f{bytes, chunk_bytes};
  for (int j = 0; j < n; ++j) {
    const int peer = group.ranks[j];
    if (j == p || (!mailed.empty() && mailed[peer])) continue;
    send_frames(plan, peer, step, send, f);
    recv_frames(plan, peer, step, inputs + j * bytes, f);
  }
}

}  // namespace

uint8_t* plan_direct_all_reduce_frames(Plan& plan, const Group& group, uint64_t chunk_bytes,
                                       Scratch& scratch, const void* send, uint64_t bytes,
                                       const std::vector<bool>& mailed) {
  uint8_t* inputs = scratch.get(0, bytes * group.size());
  plan_direct_exchange(plan, group, chunk_bytes, kDirectStep, static_cast<const uint8_t*>(send),
                       bytes, mailed, inputs);
  return inputs;
}

void plan_direct_all_gather_frames(Plan& plan, const Group& group, uint64_t chunk_bytes,
                                   const void* send, void* recv, uint64_t send_bytes,
                                   const std::vector<bool>& mailed) {
  auto* out = static_cast<uint8_t*>(recv);
  uint8_t* own = out + group.me * send_bytes;
  if (own != send) copy_bytes(own, send, send_bytes);
  plan_direct_exchange(plan, group, chunk_bytes, kDirectAllGatherStep, own, send_bytes, mailed,
                       out);
}

void reduce_gathered_inputs(const Group& group, const uint8_t* gathered, const void* send,
                            void* recv, uint64_t count, const Reduction& r, Scratch& scratch) {
  const int n = group.size();
  const uint64_t bytes = count * dtype_size(r.dtype);
  std::vector<const uint8_t*>& order = scratch.inputs_in_order;
  order.resize(n);
  for (int j = 0; j < n; ++j)
    order[j] = j == group.me ? static_cast<const uint8_t*>(send) : gathered + j * bytes;
  uint8_t* acc = scratch.get(1, count * dtype_size(accumulation_type(r.dtype)));
  fold_in_order(order, r.dtype, r.op, count, acc);
  finalize_reduction(acc, accumulation_type(r.dtype), recv, r.dtype, count, r.op, r.avg_ranks);
}

Finish build_direct_all_reduce(BuildContext& ctx, const void* send, void* recv, uint64_t count,
                               const Reduction& r) {
  const uint8_t* inputs = plan_direct_all_reduce_frames(
      *ctx.plan, ctx.group, ctx.chunk_bytes, *ctx.scratch, send, count * dtype_size(r.dtype), {});
  Scratch* scratch = ctx.scratch;
  return [=, group = ctx.group] {
    reduce_gathered_inputs(group, inputs, send, recv, count, r, *scratch);
  };
}

Finish build_ring_reduce_scatter(BuildContext& ctx, const void* send, void* recv,
                                 uint64_t recv_count, const Reduction& r) {
  Plan& plan = *ctx.plan;
  const int n = ctx.group.size(), p = ctx.group.me;
  const DType D = r.dtype, A = accumulation_type(D);
  const size_t a = dtype_size(A), d = dtype_size(D);
  const auto* in = static_cast<const uint8_t*>(send);
  auto* out = static_cast<uint8_t*>(recv);
  uint8_t* acc = ctx.scratch->get(0, recv_count * n * a);
  const uint8_t* in_a = in;
  if (A != D) {
    widen_to_f32(in, D, reinterpret_cast<float*>(acc), recv_count * n);
    in_a = acc;
  }
  const ReduceFn fn = reduce_function(A, r.op);
  const int right = ctx.group.ranks[mod(p + 1, n)], left = ctx.group.ranks[mod(p - 1, n)];
  const uint32_t C = chunks_for(recv_count * a, ctx.chunk_bytes);
  auto chunk = [&](int k, uint32_t c) {
    return chunk_of(uint64_t(k) * recv_count, recv_count, C, c);
  };
  std::vector<int> previous(C, -1);
  ring_pass(plan, n, C, previous, [&](int s, uint32_t c) {
    auto [so, sl] = chunk(mod(p - s - 1, n), c);
    int st =
        plan.send(right, kRingReduceScatterStep + s, c, (s == 0 ? in_a : acc) + so * a, sl * a);
    auto [ro, rl] = chunk(mod(p - s - 2, n), c);
    int rt = plan.recv_reduce(left, kRingReduceScatterStep + s, c, acc + ro * a, in_a + ro * a,
                              rl * a, fn, a);
    if (s == n - 2) {
      uint64_t local = ro - uint64_t(p) * recv_count;
      plan.on_complete(rt, [=] {
        finalize_reduction(acc + ro * a, A, out + local * d, D, rl, r.op, r.avg_ranks);
      });
    }
    return std::pair{st, rt};
  });
  return {};
}

Finish build_direct_reduce_scatter(BuildContext& ctx, const void* send, void* recv,
                                   uint64_t recv_count, const Reduction& r) {
  Plan& plan = *ctx.plan;
  const int n = ctx.group.size(), p = ctx.group.me;
  const uint64_t block = recv_count * dtype_size(r.dtype);
  const auto* in = static_cast<const uint8_t*>(send);
  uint8_t* inputs = ctx.scratch->get(0, block * n);
  Frames f{block, ctx.chunk_bytes};
  for (int j = 0; j < n; ++j) {
    if (j == p) continue;
    send_frames(plan, ctx.group.ranks[j], kDirectReduceScatterStep, in + j * block, f);
    recv_frames(plan, ctx.group.ranks[j], kDirectReduceScatterStep, inputs + j * block, f);
  }
  Scratch* scratch = ctx.scratch;
  return [=] {
    std::vector<const uint8_t*> order(n);
    for (int j = 0; j < n; ++j) order[j] = j == p ? in + p * block : inputs + j * block;
    uint8_t* acc = scratch->get(1, recv_count * dtype_size(accumulation_type(r.dtype)));
    fold_in_order(order, r.dtype, r.op, recv_count, acc);
    finalize_reduction(acc, accumulation_type(r.dtype), recv, r.dtype, recv_count, r.op,
                       r.avg_ranks);
  };
}

Finish build_ring_all_gather(BuildContext& ctx, const void* send, void* recv, uint64_t send_bytes) {
  Plan& plan = *ctx.plan;
  const int n = ctx.group.size(), p = ctx.group.me;
  auto* out = static_cast<uint8_t*>(recv);
  if (out + p * send_bytes != send) copy_bytes(out + p * send_bytes, send, send_bytes);
  const int right = ctx.group.ranks[mod(p + 1, n)], left = ctx.group.ranks[mod(p - 1, n)];
  const uint32_t C = chunks_for(send_bytes, ctx.chunk_bytes);
  auto chunk = [&](int k, uint32_t c) {
    return chunk_of(uint64_t(k) * send_bytes, send_bytes, C, c);
  };
  std::vector<int> previous(C, -1);
  ring_pass(plan, n, C, previous, [&](int t, uint32_t c) {
    auto [so, sl] = chunk(mod(p - t, n), c);
    int st = plan.send(right, kRingAllGatherStep + t, c, out + so, sl);
    auto [ro, rl] = chunk(mod(p - t - 1, n), c);
    return std::pair{st, plan.recv(left, kRingAllGatherStep + t, c, out + ro, rl)};
  });
  return {};
}

Finish build_direct_all_gather(BuildContext& ctx, const void* send, void* recv,
                               uint64_t send_bytes) {
  plan_direct_all_gather_frames(*ctx.plan, ctx.group, ctx.chunk_bytes, send, recv, send_bytes, {});
  return {};
}

Finish build_chain_broadcast(BuildContext& ctx, const void* send, void* recv, uint64_t bytes,
                             int root) {
  Plan& plan = *ctx.plan;
  const int n = ctx.group.size(), p = ctx.group.me;
  const int q = mod(p - root, n);
  const int next = ctx.group.ranks[mod(p + 1, n)], prev = ctx.group.ranks[mod(p - 1, n)];
  auto* out = static_cast<uint8_t*>(recv);
  Frames f{bytes, ctx.chunk_bytes};
  if (q == 0) {
    const auto* in = static_cast<const uint8_t*>(send);
    for (uint32_t c = 0; c < f.count(); ++c) {
      copy_once_sent(plan, plan.send(next, kChainStep, c, in + f.offset(c), f.length(c)), in, out,
                     f, c);
    }
    return {};
  }
  for (uint32_t c = 0; c < f.count(); ++c) {
    int rt = plan.recv(prev, kChainStep, c, out + f.offset(c), f.length(c));
    if (q < n - 1) plan.after(plan.send(next, kChainStep, c, out + f.offset(c), f.length(c)), rt);
  }
  return {};
}

Finish build_direct_broadcast(BuildContext& ctx, const void* send, void* recv, uint64_t bytes,
                              int root) {
  Plan& plan = *ctx.plan;
  const int n = ctx.group.size(), p = ctx.group.me;
  Frames f{bytes, ctx.chunk_bytes};
  if (p == root) {
    const auto* in = static_cast<const uint8_t*>(send);
    const int first = root == 0 ? 1 : 0;
    for (int j = 0; j < n; ++j) {
      if (j == p) continue;
      for (uint32_t c = 0; c < f.count(); ++c) {
        const int st =
            plan.send(ctx.group.ranks[j], kDirectBroadcastStep, c, in + f.offset(c), f.length(c));
        if (j == first) copy_once_sent(plan, st, in, static_cast<uint8_t*>(recv), f, c);
      }
    }
  } else {
    recv_frames(plan, ctx.group.ranks[root], kDirectBroadcastStep, static_cast<uint8_t*>(recv), f);
  }
  return {};
}

Finish build_chain_reduce(BuildContext& ctx, const void* send, void* recv, uint64_t count,
                          const Reduction& r, int root, bool final_result) {
  Plan& plan = *ctx.plan;
  const int n = ctx.group.size(), p = ctx.group.me;
  const int q = mod(p - root - 1, n);  // the root is last
  const DType D = r.dtype, A = accumulation_type(D);
  const size_t a = dtype_size(A), d = dtype_size(D);
  const int next = ctx.group.ranks[mod(p + 1, n)], prev = ctx.group.ranks[mod(p - 1, n)];
  const auto* in = static_cast<const uint8_t*>(send);
  auto* out = static_cast<uint8_t*>(recv);
  const uint8_t* in_a = in;
  if (A != D) {
    uint8_t* widened = ctx.scratch->get(0, count * a);
    widen_to_f32(in, D, reinterpret_cast<float*>(widened), count);
    in_a = widened;
  }
  const uint32_t C = chunks_for(count * a, ctx.chunk_bytes);
  auto chunk = [&](uint32_t c) {
    uint64_t cb = part_begin(count, static_cast<int>(C), static_cast<int>(c));
    return std::pair<uint64_t, uint64_t>{
        cb, part_begin(count, static_cast<int>(C), static_cast<int>(c) + 1) - cb};
  };
  if (q == 0) {
    for (uint32_t c = 0; c < C; ++c) {
      auto [o, l] = chunk(c);
      plan.send(next, kChainStep, c, in_a + o * a, l * a);
    }
    return {};
  }
  const bool root_here = q == n - 1;
  uint8_t* acc = (root_here && (!final_result || A == D)) ? out : ctx.scratch->get(1, count * a);
  const ReduceFn fn = reduce_function(A, r.op);
  for (uint32_t c = 0; c < C; ++c) {
    auto [o, l] = chunk(c);
    int rt = plan.recv_reduce(prev, kChainStep, c, acc + o * a, in_a + o * a, l * a, fn, a);
    if (!root_here) {
      plan.after(plan.send(next, kChainStep, c, acc + o * a, l * a), rt);
    } else if (final_result) {
      plan.on_complete(
          rt, [=] { finalize_reduction(acc + o * a, A, out + o * d, D, l, r.op, r.avg_ranks); });
    }
  }
  return {};
}

Finish build_direct_reduce(BuildContext& ctx, const void* send, void* recv, uint64_t count,
                           const Reduction& r, int root, bool final_result) {
  Plan& plan = *ctx.plan;
  const int n = ctx.group.size(), p = ctx.group.me;
  const uint64_t bytes = count * dtype_size(r.dtype);
  const auto* in = static_cast<const uint8_t*>(send);
  Frames f{bytes, ctx.chunk_bytes};
  if (p != root) {
    send_frames(plan, ctx.group.ranks[root], kDirectReduceStep, in, f);
    return {};
  }
  uint8_t* inputs = ctx.scratch->get(0, bytes * n);
  for (int j = 0; j < n; ++j) {
    if (j != p) recv_frames(plan, ctx.group.ranks[j], kDirectReduceStep, inputs + j * bytes, f);
  }
  Scratch* scratch = ctx.scratch;
  return [=] {
    std::vector<const uint8_t*> order(n);
    for (int j = 0; j < n; ++j) order[j] = j == p ? in : inputs + j * bytes;
    const DType A = accumulation_type(r.dtype);
    if (!final_result) {
      fold_in_order(order, r.dtype, r.op, count, static_cast<uint8_t*>(recv));
      return;
    }
    uint8_t* acc = scratch->get(1, count * dtype_size(A));
    fold_in_order(order, r.dtype, r.op, count, acc);
    finalize_reduction(acc, A, recv, r.dtype, count, r.op, r.avg_ranks);
  };
}

Finish build_all_to_all(BuildContext& ctx, const void* send, void* recv, uint64_t block_bytes) {
  Plan& plan = *ctx.plan;
  const int n = ctx.group.size(), p = ctx.group.me;
  const auto* in = static_cast<const uint8_t*>(send);
  auto* out = static_cast<uint8_t*>(recv);
  if (in == out) {
    // In place: the blocks that leave are sent from a copy (receives may
    // land before they left); this rank's own block stays where it is.
    uint8_t* copy = ctx.scratch->get(0, block_bytes * n);
    for (int j = 0; j < n; ++j) {
      if (j != p) copy_bytes(copy + j * block_bytes, in + j * block_bytes, block_bytes);
    }
    in = copy;
  } else {
    copy_bytes(out + p * block_bytes, in + p * block_bytes, block_bytes);
  }
  Frames f{block_bytes, ctx.chunk_bytes};
  for (int j = 0; j < n; ++j) {
    if (j == p) continue;
    send_frames(plan, ctx.group.ranks[j], kAllToAllStep, in + j * block_bytes, f);
    recv_frames(plan, ctx.group.ranks[j], kAllToAllStep, out + j * block_bytes, f);
  }
  return {};
}

}  // namespace polychip::comm
