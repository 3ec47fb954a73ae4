// The sharded optimizer in process (a communicator per thread, cpu devices):
// shard layout with padding, one AdamW step equal bit for bit to a single
// AdamW on the summed gradient, the global norm the same on every rank, and
// the gathered moments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "polychip/error.hpp"
#include "rank_threads.hpp"
#include "runtime_fixture.hpp"
#include "sharded_optimizer.hpp"

namespace polychip::training {
namespace {

constexpr int kRanks = 3;
constexpr int64_t kTotal = 10;  // shards of 4, 4 and 2 (the last padded)

// Small whole numbers: every sum is exact, whatever order the collective adds in.
std::vector<float> rank_gradient(int rank) {
  std::vector<float> g(kTotal);
  for (int64_t i = 0; i < kTotal; ++i) g[i] = static_cast<float>((i * 7 + rank * 3) % 11 - 5);
  return g;
}

std::vector<double> initial_params() {
  std::vector<double> p(kTotal);
  for (int64_t i = 0; i < kTotal; ++i) p[i] = 0.125 * static_cast<double>(i) - 0.5;
  return p;
}

const AdamWSettings kSettings{
    .learning_rate = 1e-2, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};

struct RankOutcome {
  std::string error;
  int64_t shard_begin = -1, shard_length = -1;
  double norm = 0;
  std::vector<float> params;
  std::vector<double> adam_m, adam_v;
};

// overlapped: the gradients handed over as regions, last first (as the
// backward pass finishes them), instead of one reduce-scatter.
std::vector<RankOutcome> run_ranks(int ranks, int64_t total, int steps, bool overlapped = false) {
  std::vector<RankOutcome> out(static_cast<size_t>(ranks));
  const std::vector<std::string> errors = run_rank_threads(
      ranks,
      [&](int r, comm::Communicator& comm) {
        RankOutcome& o = out[static_cast<size_t>(r)];
        CpuRuntime rt;
        ShardedAdamW optimizer(comm, rt.ops, total);
        o.shard_begin = optimizer.shard_begin();
        o.shard_length = optimizer.shard_length();
        const std::vector<double> p = initial_params(), zeros(p.size(), 0.0);
        optimizer.load({p.begin(), p.begin() + total}, {zeros.begin(), zeros.begin() + total},
                       {zeros.begin(), zeros.begin() + total});
        std::vector<float> g = rank_gradient(r);
        g.resize(static_cast<size_t>(total));
        const Tensor grads = Tensor::from_host(rt.device, DType::kF32, {total}, g);
        Tensor params(rt.device, DType::kF32, {total});
        for (int s = 1; s <= steps; ++s) {
          if (overlapped) {
            optimizer.begin_overlapped_reduction();
            for (int64_t end = total; end > 0; end -= 3)  // regions of 3, crossing shards
              optimizer.reduce_region(grads, std::max<int64_t>(0, end - 3), end);
            optimizer.finish_overlapped_reduction();
          } else {
            optimizer.reduce_scatter_gradients(grads);
          }
          o.norm = optimizer.global_grad_norm();
          optimizer.step(kSettings, s, params);
        }
        o.params = params.to_vector<float>();
        o.adam_m = optimizer.gathered_adam_m();
        o.adam_v = optimizer.gathered_adam_v();
      },
      30);
  for (int r = 0; r < ranks; ++r)
    out[static_cast<size_t>(r)].error = errors[static_cast<size_t>(r)];
  return out;
}

TEST(ShardedAdamW, TheOverlappedReductionEqualsTheReduceScatterBitForBit) {
  const std::vector<RankOutcome> plain = run_ranks(kRanks, kTotal, 2);
  const std::vector<RankOutcome> overlapped = run_ranks(kRanks, kTotal, 2, true);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(overlapped[r].error, "") << "rank " << r;
    EXPECT_EQ(overlapped[r].params, plain[r].params) << "rank " << r;
    EXPECT_EQ(overlapped[r].norm, plain[r].norm) << "rank " << r;
    EXPECT_EQ(overlapped[r].adam_m, plain[r].adam_m) << "rank " << r;
  }
}

TEST(ShardedAdamW, ShardsCoverTheParametersOnceInRankOrder) {
  const std::vector<RankOutcome> out = run_ranks(kRanks, kTotal, 1);
  const int64_t expected[kRanks][2] = {{0, 4}, {4, 4}, {8, 2}};
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(out[r].error, "") << "rank " << r;
    EXPECT_EQ(out[r].shard_begin, expected[r][0]) << "rank " << r;
    EXPECT_EQ(out[r].shard_length, expected[r][1]) << "rank " << r;
  }
  // More ranks than parameters: the last ranks hold nothing and still take part.
  const std::vector<RankOutcome> sparse = run_ranks(kRanks, 2, 2);
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(sparse[r].error, "") << "rank " << r;
  EXPECT_EQ(sparse[2].shard_length, 0);
  EXPECT_EQ(sparse[0].params, sparse[2].params);
}

TEST(ShardedAdamW, StepsEqualOneAdamWOnTheSummedGradientOnEveryRankBitForBit) {
  constexpr int kSteps = 3;
  const std::vector<RankOutcome> out = run_ranks(kRanks, kTotal, kSteps);
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(out[r].error, "") << "rank " << r;

  // One device, the whole tensor, the summed gradient.
  CpuRuntime rt;
  std::vector<float> sum(kTotal, 0.0f);
  for (int r = 0; r < kRanks; ++r)
    for (int64_t i = 0; i < kTotal; ++i) sum[i] += rank_gradient(r)[i];
  const std::vector<double> p0 = initial_params();
  const std::vector<float> p0f(p0.begin(), p0.end());
  Tensor params = Tensor::from_host(rt.device, DType::kF32, {kTotal}, p0f);
  const Tensor grads = Tensor::from_host(rt.device, DType::kF32, {kTotal}, sum);
  Tensor m(rt.device, DType::kF32, {kTotal}), v(rt.device, DType::kF32, {kTotal});
  rt.ops.fill(m, 0.0);
  rt.ops.fill(v, 0.0);
  for (int s = 1; s <= kSteps; ++s)
    rt.ops.adamw(params, grads, m, v, kSettings.learning_rate, kSettings.beta1, kSettings.beta2,
                 kSettings.eps, kSettings.weight_decay, s);
  rt.stream.synchronize();
  const std::vector<float> expected = params.to_vector<float>();
  double squares = 0;
  for (float g : sum) squares += static_cast<double>(g) * g;

  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(out[r].params, expected) << "rank " << r;
    EXPECT_EQ(out[r].norm, out[0].norm) << "rank " << r;  // the same double: the same clip
    EXPECT_NEAR(out[r].norm, std::sqrt(squares), 1e-6 * std::sqrt(squares));
    EXPECT_EQ(out[r].adam_m, host_values(m)) << "rank " << r;
    EXPECT_EQ(out[r].adam_v, host_values(v)) << "rank " << r;
  }
}

TEST(ShardedAdamW, GradientsOfTheWrongSizeAreRefused) {
  CpuRuntime rt;
  comm::Communicator comm(comm::Communicator::create_unique_id(), 0, 1);
  ShardedAdamW optimizer(comm, rt.ops, kTotal);
  const Tensor short_grads(rt.device, DType::kF32, {kTotal - 1});
  EXPECT_THROW(optimizer.reduce_scatter_gradients(short_grads), Error);
  EXPECT_THROW(optimizer.load({1.0}, {0.0}, {0.0}), Error);
  EXPECT_THROW(ShardedAdamW(comm, rt.ops, 0), Error);
}

}  // namespace
}  // namespace polychip::training
