// The split planner's cost model (split_planner.hpp) on given profiles, and
// the profile measured by ranks in process (a communicator per thread, cpu
// devices): every rank must hold the same profile, or they plan different
// splits.
#include <gtest/gtest.h>

#include "gpt2_config.hpp"
#include "polychip/error.hpp"
#include "rank_threads.hpp"
#include "runtime_fixture.hpp"
#include "split_planner.hpp"

namespace polychip::training {
namespace {

// The best split by brute force: every split of `passes` micro-batches over
// two or three ranks, one each at least.
double best_step_by_search(const StepProfile& p, int64_t passes) {
  double best = 1e300;
  const size_t ranks = p.pass_seconds.size();
  for (int64_t a = 1; a < passes; ++a)
    for (int64_t b = 1; a + b <= passes; ++b) {
      const int64_t c = passes - a - b;
      if ((ranks == 2 && c != 0) || (ranks == 3 && c < 1)) continue;
      double t = std::max(a * p.pass_seconds[0], b * p.pass_seconds[1]);
      if (ranks == 3) t = std::max(t, c * p.pass_seconds[2]);
      best = std::min(best, t + p.update_seconds);
    }
  return best;
}

TEST(SplitPlanner, PlansTheFastestSplitOfWholeMicroBatches) {
  // 70:58 speeds over 128 one-row micro-batches: 70:58 exactly.
  const StepProfile zte{{1.0 / 70, 1.0 / 58}, 0.01};
  EXPECT_EQ(plan_split(zte, 128, 1, 16).rows, (std::vector<int64_t>{70, 58}));
  // Micro-batches of 2 rows, a 3:1 pool: 24 of the 32 passes on the fast rank.
  const StepProfile three_to_one{{0.1, 0.3}, 0.0};
  const SplitPlan p = plan_split(three_to_one, 64, 2, 16);
  EXPECT_EQ(p.rows, (std::vector<int64_t>{48, 16}));
  EXPECT_DOUBLE_EQ(p.predicted_step_seconds, 2.4);
  EXPECT_NEAR(p.eta, 1.0, 1e-12);  // both ranks busy all the time, no update
  EXPECT_NEAR(p.gain, 4.0 / 3.0, 1e-12);
  // Every profile agrees with a brute-force search, and every rank gets a pass.
  for (const StepProfile& profile :
       {StepProfile{{0.01, 0.1}, 0.002}, StepProfile{{0.3, 0.1, 0.2}, 0.0},
        StepProfile{{0.05, 0.05, 1.0}, 0.01}, StepProfile{{1.0, 0.013}, 0.1}})
    for (int64_t passes : {3, 8, 13, 40}) {
      const SplitPlan plan = plan_split(profile, passes, 1, 4);
      EXPECT_DOUBLE_EQ(plan.predicted_step_seconds, best_step_by_search(profile, passes))
          << passes << " passes";
      for (int64_t rows : plan.rows) EXPECT_GE(rows, 1);
    }
}

TEST(SplitPlanner, PredictsAnySplitAndNamesItsBottleneck) {
  const StepProfile p{{0.1, 0.3}, 0.05};
  const SplitPlan even = predict_split(p, {32, 32}, 2, 16);
  EXPECT_EQ(even.bottleneck_rank, 1);
  EXPECT_DOUBLE_EQ(even.predicted_step_seconds, 16 * 0.3 + 0.05);
  // Alone, the fast device takes 32 passes of 0.1 s for the batch's 1,024 tokens.
  EXPECT_DOUBLE_EQ(even.device_tokens_per_second[0], 1024 / 3.2);
  EXPECT_NEAR(even.eta, (1024 / 4.85) / (1024 / 3.2 + 1024 / 9.6), 1e-12);
  EXPECT_LT(even.eta, plan_split(p, 64, 2, 16).eta);
  // Ranks that end together: the first of them is the bottleneck.
  EXPECT_EQ(predict_split(StepProfile{{0.2, 0.1, 0.2}, 0.0}, {2, 4, 2}, 1, 16).bottleneck_rank, 0);
  EXPECT_EQ(predict_split(StepProfile{{0.1, 0.2, 0.2}, 0.0}, {2, 2, 2}, 1, 16).bottleneck_rank, 1);
}

TEST(SplitPlanner, RefusesWhatCannotBeSplit) {
  const StepProfile two{{0.1, 0.2}, 0.0};
  EXPECT_THROW(plan_split(two, 1, 1, 4), Error);  // fewer micro-batches than ranks
  EXPECT_THROW(plan_split(two, 7, 2, 4), Error);  // not whole micro-batches
  EXPECT_THROW(predict_split(two, {3, 4}, 2, 4), Error);
  EXPECT_THROW(predict_split(two, {4}, 1, 4), Error);     // a split of one rank, a profile of two
  EXPECT_THROW(predict_split(two, {4, 4}, 1, 0), Error);  // rows of no token
  EXPECT_THROW(predict_split(two, {4, 4}, 0, 4), Error);  // micro-batches of no row
  EXPECT_NO_THROW(predict_split(two, {4, 4}, 1, 1));
  EXPECT_THROW(plan_split(StepProfile{{0.1, 0.0}, 0.0}, 8, 1, 4), Error);
  try {
    plan_split(two, 1, 1, 4);
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("--dp-split auto"), std::string::npos) << e.message();
  }
}

TEST(SplitPlanner, EveryRankMeasuresTheSameProfile) {
  constexpr int kRanks = 2;
  const TrainConfig config = train_preset("tiny");
  std::vector<StepProfile> profiles(kRanks);
  const std::vector<std::string> errors =
      run_rank_threads(kRanks, [&](int r, comm::Communicator& comm) {
        CpuRuntime rt;
        profiles[r] = measure_step_profile(comm, rt.ops, config, 1, 2);
      });
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(errors[r], "") << "rank " << r;
  ASSERT_EQ(profiles[0].pass_seconds.size(), 2u);
  EXPECT_EQ(profiles[0].pass_seconds, profiles[1].pass_seconds);
  EXPECT_EQ(profiles[0].update_seconds, profiles[1].update_seconds);
  for (double t : profiles[0].pass_seconds) EXPECT_GT(t, 0);
  EXPECT_GT(profiles[0].update_seconds, 0);
  EXPECT_EQ(plan_split(profiles[0], config.batch_size, 1, config.seq_len).rows,
            plan_split(profiles[1], config.batch_size, 1, config.seq_len).rows);
}

}  // namespace
}  // namespace polychip::training
