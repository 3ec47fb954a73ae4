// The host algorithms' plan builders (algorithms/algorithms.hpp) without
// sockets: every rank's plan runs in this thread against the others' on a
// stand-in transport that matches frames by (sender, receiver, step,
// chunk), as the real one does, and moves them in a seeded random order
// (a send leaves once its prerequisites completed, reading its bytes then;
// a frame lands whenever). Each rank's result is compared bit for bit with
// a fold in the order the header documents, for 1-5 ranks in shuffled
// groups, counts that do not split evenly (and 0 and 1), chunks of a few
// bytes, every dtype and op, every root, in place and not; no byte outside
// a rank's buffers (or of an input out of place) may change.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/algorithms.hpp"
#include "algorithms/plan.hpp"
#include "algorithms/reduce_kernels.hpp"
#include "polychip/dtype.hpp"

using namespace polychip;
using namespace polychip::comm;

namespace {

constexpr DType kCommDTypes[] = {DType::kF32, DType::kF16, DType::kBF16,
                                 DType::kF64, DType::kI32, DType::kI64};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kAvg};

// A frame: sender, receiver (global ranks), step, chunk.
using FrameKey = std::tuple<int, int, uint32_t, uint32_t>;

// Runs plans[g] (global rank g's) until nothing can move. Each turn makes
// one of the moves possible next, at random: a send whose prerequisites
// completed leaves (its bytes are read now), or a frame that left lands in
// its receive (or receive-and-reduce). A frame nobody receives, a size
// mismatch, or a task left undone (a hang on a real transport) fails, and
// so does a frame over `chunk_bytes` by a whole element or more (the wire
// refuses frames over 64 MiB: large calls must go in chunks).
void run_plans(std::vector<Plan>& plans, uint64_t chunk_bytes, std::mt19937& rng) {
  const int world = static_cast<int>(plans.size());
  struct Frame {
    FrameKey key;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::pair<int, int>> ready;  // (rank, send task)
  std::vector<Frame> in_flight;
  std::vector<std::map<FrameKey, int>> receives(world);
  auto complete = [&](int g, int i) {
    Task& t = plans[g].tasks()[i];
    t.done = true;
    if (t.on_complete) t.on_complete();
    for (int d : t.dependents) {
      Task& dep = plans[g].tasks()[d];
      if (--dep.unmet == 0 && dep.is_send) ready.emplace_back(g, d);
    }
  };
  for (int g = 0; g < world; ++g) {
    std::vector<Task>& tasks = plans[g].tasks();
    for (int i = 0; i < static_cast<int>(tasks.size()); ++i) {
      const Task& t = tasks[i];
      ASSERT_TRUE(t.peer >= 0 && t.peer < world && t.peer != g)
          << "rank " << g << " plans a frame with rank " << t.peer;
      ASSERT_LT(t.bytes, chunk_bytes + 8) << "rank " << g << ", step " << t.step << " chunk "
                                          << t.chunk << ": chunks of " << chunk_bytes << " bytes";
      if (t.is_send && t.unmet == 0) ready.emplace_back(g, i);
      if (!t.is_send) {
        ASSERT_TRUE(receives[g].emplace(FrameKey{t.peer, g, t.step, t.chunk}, i).second)
            << "rank " << g << " receives step " << t.step << " chunk " << t.chunk << " from "
            << t.peer << " twice";
      }
    }
  }
  while (!ready.empty() || !in_flight.empty()) {
    const size_t pick =
        std::uniform_int_distribution<size_t>(0, ready.size() + in_flight.size() - 1)(rng);
    if (pick < ready.size()) {
      const auto [g, i] = ready[pick];
      ready[pick] = ready.back();
      ready.pop_back();
      const Task& t = plans[g].tasks()[i];
      in_flight.push_back(
          {FrameKey{g, t.peer, t.step, t.chunk}, std::vector<uint8_t>(t.data, t.data + t.bytes)});
      complete(g, i);
      continue;
    }
    Frame frame = std::move(in_flight[pick - ready.size()]);
    in_flight[pick - ready.size()] = std::move(in_flight.back());
    in_flight.pop_back();
    const auto [from, to, step, chunk] = frame.key;
    const auto it = receives[to].find(frame.key);
    ASSERT_NE(it, receives[to].end())
        << "rank " << from << " sent step " << step << " chunk " << chunk << " to rank " << to
        << ", which receives no such frame";
    const int i = it->second;
    receives[to].erase(it);
    Task& t = plans[to].tasks()[i];
    ASSERT_EQ(frame.bytes.size(), t.bytes)
        << "step " << step << " chunk " << chunk << " from " << from << " to " << to;
    if (t.reduce) {
      t.reduce(t.data, frame.bytes.data(), t.local, t.bytes / t.element_size);
    } else if (t.bytes > 0) {
      std::memcpy(t.data, frame.bytes.data(), t.bytes);
    }
    complete(to, i);
  }
  for (int g = 0; g < world; ++g) {
    for (const Task& t : plans[g].tasks()) {
      ASSERT_TRUE(t.done) << "rank " << g << "'s " << (t.is_send ? "send to " : "receive from ")
                          << t.peer << " of step " << t.step << " chunk " << t.chunk
                          << " never ran";
    }
  }
}

// A rank's buffer with guard bytes either side and a known fill.
class Guarded {
 public:
  static constexpr size_t kGuard = 32;
  explicit Guarded(uint64_t bytes = 0, uint8_t fill = 0xEE)
      : bytes_(bytes), storage_(bytes + 2 * kGuard, kGuardByte) {
    std::fill_n(data(), bytes, fill);
  }
  uint8_t* data() { return storage_.data() + kGuard; }
  const uint8_t* data() const { return storage_.data() + kGuard; }
  uint64_t bytes() const { return bytes_; }
  std::vector<uint8_t> contents() const { return {data(), data() + bytes_}; }
  bool guards_intact() const {
    return std::all_of(storage_.begin(), storage_.begin() + kGuard,
                       [](uint8_t b) { return b == kGuardByte; }) &&
           std::all_of(storage_.end() - kGuard, storage_.end(),
                       [](uint8_t b) { return b == kGuardByte; });
  }

 private:
  static constexpr uint8_t kGuardByte = 0x5A;
  uint64_t bytes_;
  std::vector<uint8_t> storage_;
};

// Values whose folds stay finite and exact where they should (integer
// products stay small) and whose float sums round differently in another
// order (magnitudes 2^-6 .. 2^6).
std::vector<uint8_t> random_values(DType dtype, ReduceOp op, uint64_t count, std::mt19937& rng) {
  std::vector<uint8_t> out(count * dtype_size(dtype));
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-6, 6);
  const int64_t range = op == ReduceOp::kProd  ? 4
                        : dtype == DType::kI64 ? int64_t{1} << 40
                                               : 100000;
  std::uniform_int_distribution<int64_t> integer(-range, range);
  for (uint64_t i = 0; i < count; ++i) {
    const double real = std::ldexp(mantissa(rng), exponent(rng));
    uint8_t* at = out.data() + i * dtype_size(dtype);
    switch (dtype) {
      case DType::kF64:
        std::memcpy(at, &real, 8);
        break;
      case DType::kF32: {
        const auto f = static_cast<float>(real);
        std::memcpy(at, &f, 4);
        break;
      }
      case DType::kF16: {
        const uint16_t h = float_to_half_bits(static_cast<float>(real));
        std::memcpy(at, &h, 2);
        break;
      }
      case DType::kBF16: {
        const uint16_t h = float_to_bfloat16_bits(static_cast<float>(real));
        std::memcpy(at, &h, 2);
        break;
      }
      case DType::kI32: {
        const auto v = static_cast<int32_t>(integer(rng));
        std::memcpy(at, &v, 4);
        break;
      }
      default: {
        const int64_t v = integer(rng);
        std::memcpy(at, &v, 8);
        break;
      }
    }
  }
  return out;
}

// Element i of inputs[order[0]] op inputs[order[1]] op ... (left to right,
// D-typed inputs) in the accumulation type, finalised into `dst` (D) or
// left as the accumulator (A).
void fold_element(const std::vector<std::vector<uint8_t>>& inputs, const std::vector<int>& order,
                  uint64_t i, const Reduction& r, bool final_result, uint8_t* dst) {
  const DType A = accumulation_type(r.dtype);
  const size_t a = dtype_size(A), d = dtype_size(r.dtype);
  std::vector<uint8_t> acc(a), x(a);
  auto widen = [&](int k, uint8_t* to) {
    const uint8_t* from = inputs[k].data() + i * d;
    if (A != r.dtype) {
      widen_to_f32(from, r.dtype, reinterpret_cast<float*>(to), 1);
    } else {
      std::memcpy(to, from, d);
    }
  };
  widen(order[0], acc.data());
  for (size_t k = 1; k < order.size(); ++k) {
    widen(order[k], x.data());
    reduce_function(A, r.op)(acc.data(), acc.data(), x.data(), 1);
  }
  if (final_result) {
    finalize_reduction(acc.data(), A, dst, r.dtype, 1, r.op, r.avg_ranks);
  } else {
    std::memcpy(dst, acc.data(), a);
  }
}

// Positions first, first + 1, ... around a group of n.
std::vector<int> ring_from(int first, int n) {
  std::vector<int> order(n);
  for (int k = 0; k < n; ++k) order[k] = (first + k) % n;
  return order;
}

// Segment k of `count` elements split into n: [count * k / n, count * (k + 1) / n).
uint64_t segment_begin(uint64_t count, int n, int k) { return count * k / n; }

struct Shape {
  int n;
  uint64_t count;
  uint64_t chunk_bytes;
  bool in_place;
  uint32_t seed;
};

std::string describe(const Shape& s, const Reduction& r) {
  return std::to_string(s.n) + " ranks, count " + std::to_string(s.count) + ", chunks of " +
         std::to_string(s.chunk_bytes) + " bytes, " + std::string(dtype_name(r.dtype)) + " " +
         std::string(reduce_op_name(r.op)) + (s.in_place ? ", in place" : "") + ", seed " +
         std::to_string(s.seed);
}

// The shapes every collective runs: 2-5 ranks (1 where `one_rank`), counts
// around the rank count and larger odd ones (41 and 59 bytes end one byte
// short of a whole chunk), chunks of a few bytes to one frame a segment, in
// place and not; dtype and op go round all of theirs.
template <typename Fn>
void for_each_shape(bool one_rank, bool zero_count, Fn fn) {
  uint32_t seed = 0;
  for (int n = one_rank ? 1 : 2; n <= 5; ++n) {
    std::vector<uint64_t> counts{1, uint64_t(n) + 1, 2 * uint64_t(n) + 1, 41, 59, 250};
    if (n > 2) counts.push_back(n - 1);
    if (zero_count) counts.push_back(0);
    for (uint64_t count : counts) {
      for (uint64_t chunk : {uint64_t{7}, uint64_t{20}, uint64_t{1} << 20}) {
        for (bool in_place : {false, true}) {
          const DType dtype = kCommDTypes[seed % 6];
          const ReduceOp op = kOps[(seed / 6) % 5];
          fn(Shape{n, count, chunk, in_place, seed}, Reduction{dtype, op, n});
          ++seed;
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
}

// Every dtype and op on a few shapes (uneven segments, several chunks).
template <typename Fn>
void for_each_dtype_and_op(Fn fn) {
  uint32_t seed = 1000;
  for (int n : {2, 3, 4}) {
    for (DType dtype : kCommDTypes) {
      for (ReduceOp op : kOps) {
        fn(Shape{n, 2 * uint64_t(n) + 3, 16, seed % 2 == 1, seed}, Reduction{dtype, op, n});
        ++seed;
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

// One call on every rank: group position j is global rank group[j] (a
// shuffle of 0..n-1); build(ctx, j) adds position j's tasks and returns its
// finish, run once every plan is done.
void run_collective(const Shape& s, const std::function<Finish(BuildContext&, int)>& build,
                    const std::function<void(int, const uint8_t*, uint64_t)>& output_final = {}) {
  std::mt19937 rng(s.seed);
  std::vector<int> global(s.n);
  std::iota(global.begin(), global.end(), 0);
  std::shuffle(global.begin(), global.end(), rng);
  std::vector<Plan> plans;
  for (int g = 0; g < s.n; ++g) plans.emplace_back(FrameKind::kCollective, 7, "test");
  std::vector<Scratch> scratch(s.n);
  std::vector<Finish> finish(s.n);
  for (int j = 0; j < s.n; ++j) {
    BuildContext ctx{&plans[global[j]], Group{global, j}, s.chunk_bytes, &scratch[j], {}, {}};
    if (output_final) {
      ctx.output_final = [&output_final, j](const uint8_t* p, uint64_t n) {
        output_final(j, p, n);
      };
    }
    finish[j] = build(ctx, j);
  }
  run_plans(plans, s.chunk_bytes, rng);
  for (Finish& f : finish)
    if (f) f();
}

// Random bytes of every rank, `bytes` each.
std::vector<std::vector<uint8_t>> byte_inputs(const Shape& s, uint64_t bytes) {
  std::mt19937 rng(s.seed * 7919 + 2);
  std::vector<std::vector<uint8_t>> inputs(s.n, std::vector<uint8_t>(bytes));
  for (auto& in : inputs)
    for (uint8_t& b : in) b = static_cast<uint8_t>(rng());
  return inputs;
}

// Inputs of every rank, `per_rank` elements each.
std::vector<std::vector<uint8_t>> inputs_for(const Shape& s, const Reduction& r,
                                             uint64_t per_rank) {
  std::mt19937 rng(s.seed * 7919 + 1);
  std::vector<std::vector<uint8_t>> inputs;
  for (int j = 0; j < s.n; ++j) inputs.push_back(random_values(r.dtype, r.op, per_rank, rng));
  return inputs;
}

// Checks a rank's buffer: its guards, and its bytes against `want`.
void expect_bytes(const Guarded& b, const std::vector<uint8_t>& want, const std::string& what) {
  EXPECT_TRUE(b.guards_intact()) << what << ": wrote outside the buffer";
  EXPECT_TRUE(b.contents() == want) << what;
}

// All-reduce (ring or direct): every rank ends with the same bits, the
// fold of each element in its documented order. The ring's output_final
// must name every output byte once, when it already holds its final bits.
void check_all_reduce(bool ring, const Shape& s, const Reduction& r, bool mark) {
  const size_t d = dtype_size(r.dtype);
  const std::string what = (ring ? "ring, " : "direct, ") + describe(s, r);
  const auto inputs = inputs_for(s, r, s.count);
  std::vector<uint8_t> want(s.count * d);
  for (uint64_t i = 0; i < s.count; ++i) {
    int k = 0;
    while (segment_begin(s.count, s.n, k + 1) <= i) ++k;
    fold_element(inputs, ring ? ring_from(k, s.n) : ring_from(0, s.n), i, r, true,
                 want.data() + i * d);
  }
  std::vector<Guarded> send(s.n), recv(s.n);
  std::vector<std::vector<int>> marks(s.n, std::vector<int>(s.count * d));
  for (int j = 0; j < s.n; ++j) {
    send[j] = Guarded(s.count * d);
    std::copy(inputs[j].begin(), inputs[j].end(), send[j].data());
    if (!s.in_place) recv[j] = Guarded(s.count * d);
  }
  auto out = [&](int j) { return s.in_place ? send[j].data() : recv[j].data(); };
  auto on_final = [&](int j, const uint8_t* p, uint64_t n) {
    const uint64_t at = static_cast<uint64_t>(p - out(j));
    ASSERT_LE(at + n, s.count * d) << what << ": rank " << j << " marked bytes past its output";
    EXPECT_EQ(std::memcmp(p, want.data() + at, n), 0)
        << what << ": rank " << j << " marked bytes " << at << "+" << n
        << " before they were final";
    for (uint64_t b = at; b < at + n; ++b) ++marks[j][b];
  };
  run_collective(
      s,
      [&](BuildContext& ctx, int j) {
        return ring ? build_ring_all_reduce(ctx, send[j].data(), out(j), s.count, r)
                    : build_direct_all_reduce(ctx, send[j].data(), out(j), s.count, r);
      },
      mark ? std::function<void(int, const uint8_t*, uint64_t)>(on_final) : nullptr);
  for (int j = 0; j < s.n; ++j) {
    const std::string rank = what + ", rank " + std::to_string(j);
    expect_bytes(s.in_place ? send[j] : recv[j], want, rank);
    if (!s.in_place) expect_bytes(send[j], inputs[j], rank + " (input)");
    if (mark) {
      EXPECT_TRUE(std::all_of(marks[j].begin(), marks[j].end(), [](int m) { return m == 1; }))
          << rank << ": output_final did not name every byte once";
    }
  }
}

TEST(HostAlgorithms, RingAllReduceFoldsEachSegmentAroundTheRingEndingAtItsOwner) {
  for_each_shape(false, true, [](const Shape& s, const Reduction& r) {
    check_all_reduce(true, s, r, s.seed % 4 < 2);
  });
  for_each_dtype_and_op(
      [](const Shape& s, const Reduction& r) { check_all_reduce(true, s, r, true); });
}

TEST(HostAlgorithms, DirectAllReduceFoldsInGroupOrderOnEveryRank) {
  for_each_shape(false, true,
                 [](const Shape& s, const Reduction& r) { check_all_reduce(false, s, r, false); });
  for_each_dtype_and_op(
      [](const Shape& s, const Reduction& r) { check_all_reduce(false, s, r, false); });
}

// The leaders' all-reduce of the hierarchical path: accumulators (f32 for
// f16/bf16 callers) in place, no avg division (avg_ranks 1).
TEST(HostAlgorithms, AllReduceOfAccumulatorsInPlace) {
  for (bool ring : {true, false}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      for (int n : {2, 3}) {
        check_all_reduce(ring, Shape{n, 11, 8, true, uint32_t(n)}, Reduction{DType::kF32, op, 1},
                         false);
      }
    }
  }
}

// Reduce-scatter: rank j ends with block j; the ring folds block k from
// rank k + 1 around to k, the direct algorithm in group order.
void check_reduce_scatter(bool ring, const Shape& s, const Reduction& r) {
  const size_t d = dtype_size(r.dtype);
  const uint64_t block = s.count * d;
  const std::string what = (ring ? "ring, " : "direct, ") + describe(s, r);
  const auto inputs = inputs_for(s, r, s.count * s.n);
  std::vector<Guarded> send(s.n), recv(s.n);
  for (int j = 0; j < s.n; ++j) {
    send[j] = Guarded(block * s.n);
    std::copy(inputs[j].begin(), inputs[j].end(), send[j].data());
    if (!s.in_place) recv[j] = Guarded(block);
  }
  auto out = [&](int j) { return s.in_place ? send[j].data() + j * block : recv[j].data(); };
  run_collective(s, [&](BuildContext& ctx, int j) {
    return ring ? build_ring_reduce_scatter(ctx, send[j].data(), out(j), s.count, r)
                : build_direct_reduce_scatter(ctx, send[j].data(), out(j), s.count, r);
  });
  for (int j = 0; j < s.n; ++j) {
    const std::string rank = what + ", rank " + std::to_string(j);
    std::vector<uint8_t> want(block);
    for (uint64_t i = 0; i < s.count; ++i) {
      fold_element(inputs, ring ? ring_from((j + 1) % s.n, s.n) : ring_from(0, s.n),
                   j * s.count + i, r, true, want.data() + i * d);
    }
    if (s.in_place) {
      // Only this rank's block of its input is its output.
      std::vector<uint8_t> whole = inputs[j];
      std::copy(want.begin(), want.end(), whole.begin() + j * block);
      expect_bytes(send[j], whole, rank);
    } else {
      expect_bytes(recv[j], want, rank);
      expect_bytes(send[j], inputs[j], rank + " (input)");
    }
  }
}

TEST(HostAlgorithms, RingReduceScatterEndsEachBlockAtItsOwner) {
  for_each_shape(false, false,
                 [](const Shape& s, const Reduction& r) { check_reduce_scatter(true, s, r); });
  for_each_dtype_and_op(
      [](const Shape& s, const Reduction& r) { check_reduce_scatter(true, s, r); });
}

TEST(HostAlgorithms, DirectReduceScatterFoldsEachBlockInGroupOrder) {
  for_each_shape(false, false,
                 [](const Shape& s, const Reduction& r) { check_reduce_scatter(false, s, r); });
  for_each_dtype_and_op(
      [](const Shape& s, const Reduction& r) { check_reduce_scatter(false, s, r); });
}

// All-gather: block j of every rank's output is rank j's input (in place:
// the input already is block j of the output).
void check_all_gather(bool ring, const Shape& s) {
  const uint64_t bytes = s.count;
  const std::string what = (ring ? "ring, " : "direct, ") + std::to_string(s.n) + " ranks, " +
                           std::to_string(bytes) + " bytes, chunks of " +
                           std::to_string(s.chunk_bytes) + (s.in_place ? ", in place" : "");
  const auto inputs = byte_inputs(s, bytes);
  std::vector<uint8_t> want;
  for (const auto& in : inputs) want.insert(want.end(), in.begin(), in.end());
  std::vector<Guarded> send(s.n), recv(s.n);
  for (int j = 0; j < s.n; ++j) {
    recv[j] = Guarded(bytes * s.n);
    if (!s.in_place) send[j] = Guarded(bytes);
    uint8_t* in = s.in_place ? recv[j].data() + j * bytes : send[j].data();
    std::memcpy(in, inputs[j].data(), bytes);
  }
  run_collective(s, [&](BuildContext& ctx, int j) {
    const uint8_t* in = s.in_place ? recv[j].data() + j * bytes : send[j].data();
    return ring ? build_ring_all_gather(ctx, in, recv[j].data(), bytes)
                : build_direct_all_gather(ctx, in, recv[j].data(), bytes);
  });
  for (int j = 0; j < s.n; ++j) {
    const std::string rank = what + ", rank " + std::to_string(j);
    expect_bytes(recv[j], want, rank);
    if (!s.in_place) expect_bytes(send[j], inputs[j], rank + " (input)");
  }
}

TEST(HostAlgorithms, AllGatherPutsEveryRanksInputInItsBlock) {
  for (bool ring : {true, false}) {
    for_each_shape(true, false,
                   [&](const Shape& s, const Reduction&) { check_all_gather(ring, s); });
  }
}

// Broadcast from every root: the root's input on every rank; the other
// ranks pass no input (the communicator's null), the root may broadcast
// in place.
void check_broadcast(bool chain, const Shape& s, int root) {
  const uint64_t bytes = s.count;
  const std::string what = (chain ? "chain, " : "direct, ") + std::to_string(s.n) +
                           " ranks, root " + std::to_string(root) + ", " + std::to_string(bytes) +
                           " bytes, chunks of " + std::to_string(s.chunk_bytes) +
                           (s.in_place ? ", in place" : "");
  const auto inputs = byte_inputs(s, bytes);
  Guarded send(bytes);
  std::memcpy(send.data(), inputs[root].data(), bytes);
  std::vector<Guarded> recv(s.n);
  for (int j = 0; j < s.n; ++j)
    if (j != root || !s.in_place) recv[j] = Guarded(bytes);
  auto out = [&](int j) { return j == root && s.in_place ? send.data() : recv[j].data(); };
  run_collective(s, [&](BuildContext& ctx, int j) {
    const uint8_t* in = j == root ? send.data() : nullptr;
    return chain ? build_chain_broadcast(ctx, in, out(j), bytes, root)
                 : build_direct_broadcast(ctx, in, out(j), bytes, root);
  });
  expect_bytes(send, inputs[root], what + " (root's input)");
  for (int j = 0; j < s.n; ++j) {
    if (j != root || !s.in_place)
      expect_bytes(recv[j], inputs[root], what + ", rank " + std::to_string(j));
  }
}

TEST(HostAlgorithms, BroadcastFromEveryRootReachesEveryRank) {
  for (bool chain : {true, false}) {
    for_each_shape(false, false, [&](const Shape& s, const Reduction&) {
      for (int root = 0; root < s.n; ++root) check_broadcast(chain, s, root);
    });
  }
}

// Reduce to every root: the chain folds from root + 1 around to the root,
// the direct algorithm in group order; only the root has an output (the
// others pass the communicator's null). With final_result false (the
// hierarchical path's island reduce) the root gets the accumulators.
void check_reduce(bool chain, const Shape& s, const Reduction& r, int root, bool final_result) {
  const size_t d = dtype_size(r.dtype), a = dtype_size(accumulation_type(r.dtype));
  const size_t out_size = final_result ? d : a;
  const std::string what = (chain ? "chain, root " : "direct, root ") + std::to_string(root) +
                           (final_result ? ", " : ", partial, ") + describe(s, r);
  const auto inputs = inputs_for(s, r, s.count);
  std::vector<uint8_t> want(s.count * out_size);
  for (uint64_t i = 0; i < s.count; ++i) {
    fold_element(inputs, chain ? ring_from((root + 1) % s.n, s.n) : ring_from(0, s.n), i, r,
                 final_result, want.data() + i * out_size);
  }
  const bool in_place = s.in_place && final_result;
  std::vector<Guarded> send(s.n);
  for (int j = 0; j < s.n; ++j) {
    send[j] = Guarded(s.count * d);
    std::copy(inputs[j].begin(), inputs[j].end(), send[j].data());
  }
  Guarded recv(in_place ? 0 : s.count * out_size);
  uint8_t* out = in_place ? send[root].data() : recv.data();
  run_collective(s, [&](BuildContext& ctx, int j) {
    uint8_t* mine = j == root ? out : nullptr;
    return chain ? build_chain_reduce(ctx, send[j].data(), mine, s.count, r, root, final_result)
                 : build_direct_reduce(ctx, send[j].data(), mine, s.count, r, root, final_result);
  });
  expect_bytes(in_place ? send[root] : recv, want, what);
  for (int j = 0; j < s.n; ++j) {
    if (j != root || !in_place)
      expect_bytes(send[j], inputs[j], what + ", input of rank " + std::to_string(j));
  }
}

TEST(HostAlgorithms, ReduceToEveryRootFoldsInItsDocumentedOrder) {
  for (bool chain : {true, false}) {
    for_each_shape(false, false, [&](const Shape& s, const Reduction& r) {
      for (int root = 0; root < s.n; ++root) check_reduce(chain, s, r, root, s.seed % 3 != 0);
    });
    for_each_dtype_and_op([&](const Shape& s, const Reduction& r) {
      for (bool final_result : {true, false}) check_reduce(chain, s, r, 1, final_result);
    });
  }
}

// All-to-all: block k of rank j's output is block j of rank k's input;
// in place too (blocks that leave go from a copy).
void check_all_to_all(const Shape& s) {
  const uint64_t block = s.count;
  const std::string what = std::to_string(s.n) + " ranks, blocks of " + std::to_string(block) +
                           " bytes, chunks of " + std::to_string(s.chunk_bytes) +
                           (s.in_place ? ", in place" : "");
  const auto inputs = byte_inputs(s, block * s.n);
  std::vector<Guarded> send(s.n), recv(s.n);
  for (int j = 0; j < s.n; ++j) {
    send[j] = Guarded(block * s.n);
    std::memcpy(send[j].data(), inputs[j].data(), block * s.n);
    if (!s.in_place) recv[j] = Guarded(block * s.n);
  }
  auto out = [&](int j) { return s.in_place ? send[j].data() : recv[j].data(); };
  run_collective(s, [&](BuildContext& ctx, int j) {
    return build_all_to_all(ctx, send[j].data(), out(j), block);
  });
  for (int j = 0; j < s.n; ++j) {
    std::vector<uint8_t> want;
    for (int k = 0; k < s.n; ++k)
      want.insert(want.end(), inputs[k].begin() + j * block, inputs[k].begin() + (j + 1) * block);
    const std::string rank = what + ", rank " + std::to_string(j);
    expect_bytes(s.in_place ? send[j] : recv[j], want, rank);
    if (!s.in_place) expect_bytes(send[j], inputs[j], rank + " (input)");
  }
}

TEST(HostAlgorithms, AllToAllSwapsBlocksBetweenEveryPair) {
  for_each_shape(true, false, [](const Shape& s, const Reduction&) { check_all_to_all(s); });
}

// Peers (by global rank) whose pairs have mailboxes at both ends: those
// whose bit in `mask` is set.
std::vector<bool> mailed_for(int me, int n, unsigned mask) {
  std::vector<bool> mailed(n, false);
  for (int g = 0; g < n; ++g) mailed[g] = g != me && (mask >> g & 1) && (mask >> me & 1);
  return mailed;
}

// The direct all-reduce and all-gather beside the mailboxes: frames only
// with the peers that have none; the test stands in for the mail (it puts
// those peers' inputs where the frames would have).
TEST(HostAlgorithms, DirectExchangesLeaveMailedPeersToTheMailboxes) {
  const Reduction r{DType::kF32, ReduceOp::kSum, 4};
  const int n = 4;
  for (unsigned mask : {0u, 3u, 6u, 13u, 15u}) {
    const Shape s{n, 9, 8, false, mask};
    const uint64_t bytes = s.count * 4;
    const auto inputs = inputs_for(s, r, s.count);
    std::vector<uint8_t> want(bytes), gathered_want;
    for (uint64_t i = 0; i < s.count; ++i)
      fold_element(inputs, ring_from(0, n), i, r, true, want.data() + i * 4);
    for (const auto& in : inputs) gathered_want.insert(gathered_want.end(), in.begin(), in.end());
    std::vector<Guarded> send(n), reduced(n), gathered(n);
    std::vector<const uint8_t*> frames_into(n);
    std::vector<Scratch> scratch(n);
    std::vector<Group> groups(n);
    for (int j = 0; j < n; ++j) {
      send[j] = Guarded(bytes);
      std::memcpy(send[j].data(), inputs[j].data(), bytes);
      reduced[j] = Guarded(bytes);
      gathered[j] = Guarded(bytes * n);
    }
    std::mt19937 rng(mask);
    std::vector<Plan> reduce_plans, gather_plans;
    for (int g = 0; g < n; ++g) {
      reduce_plans.emplace_back(FrameKind::kCollective, 1, "all_reduce");
      gather_plans.emplace_back(FrameKind::kCollective, 2, "all_gather");
    }
    // Group position j is global rank n - 1 - j: `mailed` goes by global rank.
    std::vector<int> global(n);
    for (int j = 0; j < n; ++j) global[j] = n - 1 - j;
    std::vector<uint8_t*> inputs_at(n);
    for (int j = 0; j < n; ++j) {
      const Group group{global, j};
      const std::vector<bool> mailed = mailed_for(global[j], n, mask);
      inputs_at[j] = plan_direct_all_reduce_frames(reduce_plans[global[j]], group, s.chunk_bytes,
                                                   scratch[j], send[j].data(), bytes, mailed);
      plan_direct_all_gather_frames(gather_plans[global[j]], group, s.chunk_bytes, send[j].data(),
                                    gathered[j].data(), bytes, mailed);
    }
    run_plans(reduce_plans, s.chunk_bytes, rng);
    run_plans(gather_plans, s.chunk_bytes, rng);
    for (int j = 0; j < n; ++j) {
      const std::string what = "mask " + std::to_string(mask) + ", rank " + std::to_string(j);
      const std::vector<bool> mailed = mailed_for(global[j], n, mask);
      for (Plan* plan : {&reduce_plans[global[j]], &gather_plans[global[j]]}) {
        for (const Task& t : plan->tasks())
          EXPECT_FALSE(mailed[t.peer]) << what << ": a frame with mailed rank " << t.peer;
      }
      for (int k = 0; k < n; ++k) {
        if (!mailed[global[k]]) continue;
        std::memcpy(inputs_at[j] + k * bytes, inputs[k].data(), bytes);
        std::memcpy(gathered[j].data() + k * bytes, inputs[k].data(), bytes);
      }
      reduce_gathered_inputs(Group{global, j}, inputs_at[j], send[j].data(), reduced[j].data(),
                             s.count, r, scratch[j]);
      expect_bytes(reduced[j], want, what + " (all-reduce)");
      expect_bytes(gathered[j], gathered_want, what + " (all-gather)");
    }
  }
}

}  // namespace
