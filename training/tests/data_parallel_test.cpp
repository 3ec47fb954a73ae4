// Data parallelism in process (libraries, a communicator per thread): the
// batch shares, a one-rank run equal to the single-device run bit for bit
// with `comm.before_all_reduce` called (sharded and replicated optimizer),
// and the weight agreement (a one-bit difference ends the job, or is
// replaced by rank 0's weights).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "data_parallel.hpp"
#include "polychip/error.hpp"
#include "runtime_fixture.hpp"
#include "trainer.hpp"

namespace polychip::training {
namespace {

TEST(DataParallel, UniformSplitsCoverTheBatchInContiguousRowsDifferingByAtMostOne) {
  for (int ranks = 1; ranks <= 8; ++ranks) {
    const std::vector<int64_t> split = uniform_split(8, ranks);
    ASSERT_EQ(split.size(), static_cast<size_t>(ranks));
    int64_t next = 0;
    for (int r = 0; r < ranks; ++r) {
      const BatchShare s = batch_share(split, r);
      EXPECT_EQ(s.first_row, next);
      EXPECT_TRUE(s.rows == 8 / ranks || s.rows == 8 / ranks + 1);
      next += s.rows;
    }
    EXPECT_EQ(next, 8);
  }
  EXPECT_EQ(uniform_split(8, 3), (std::vector<int64_t>{3, 3, 2}));
  EXPECT_THROW(uniform_split(2, 3), Error);
  EXPECT_THROW(batch_share(uniform_split(8, 3), 3), Error);
}

TEST(DataParallel, AnExplicitSplitGivesEachRankItsRowsContiguouslyInRankOrder) {
  const std::vector<int64_t> split = parse_split("70:58", 128, 2);
  EXPECT_EQ(split, (std::vector<int64_t>{70, 58}));
  EXPECT_EQ(split_text(split), "70:58");
  EXPECT_EQ(batch_share(split, 0).first_row, 0);
  EXPECT_EQ(batch_share(split, 0).rows, 70);
  EXPECT_EQ(batch_share(split, 1).first_row, 70);
  EXPECT_EQ(batch_share(split, 1).rows, 58);
  const std::vector<int64_t> three = parse_split("1:5:2", 8, 3);
  EXPECT_EQ(batch_share(three, 2).first_row, 6);
  EXPECT_EQ(batch_share(three, 2).rows, 2);
}

// The message of the INVALID_ARGUMENT parse_split(text, 8, 2) throws.
std::string refusal(const std::string& text) {
  try {
    parse_split(text, 8, 2);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << text;
    return e.message();
  }
  ADD_FAILURE() << "'" << text << "' was accepted";
  return {};
}

TEST(DataParallel, AMalformedSplitIsRefusedNamingTheProblem) {
  EXPECT_NE(refusal("6:1:1").find("3 entries for 2 ranks"), std::string::npos);
  EXPECT_NE(refusal("8").find("1 entry for 2 ranks"), std::string::npos);
  EXPECT_NE(refusal("8:0").find("rank 1 gets 0 rows"), std::string::npos);
  EXPECT_NE(refusal("3:1").find("the rows sum to 4, but the global batch"), std::string::npos);
  EXPECT_NE(refusal("9223372036854775807:1").find("sum to more than 8"), std::string::npos);
  for (const char* text : {"", "6:", ":2", "6::2", "a:2", "6.0:2", "-6:14", "+6:2", " 6:2", "6,2",
                           "99999999999999999999:2"})
    EXPECT_NE(refusal(text).find("is not a whole number of rows"), std::string::npos) << text;
  EXPECT_THROW(check_split({6, 2}, 8, 3), Error);
  EXPECT_THROW(check_split({-2, 10}, 8, 2), Error);
}

std::vector<std::string> hook_calls;
polychip_status record_hook(const polychip_hook_args* a) {
  hook_calls.push_back(std::string(a->hook_point) + "@" + a->device_type);
  return POLYCHIP_OK;
}

void expect_one_rank_run_is_the_single_device_run(WeightPolicy policy) {
  const TrainConfig config = train_preset("tiny");
  CpuRuntime single_rt;
  Trainer single(config, single_rt.ops);
  CpuRuntime rt;
  hook_calls.clear();
  for (const char* point : {"train.after_backward", "comm.before_all_reduce"})
    rt.runtime.dispatcher().register_hook("cpu.host", point, &record_hook, "dp_test");
  comm::Communicator comm(comm::Communicator::create_unique_id(), 0, 1);
  DataParallelRank rank(comm, config.batch_size, policy);
  Trainer parallel(config, rt.ops, &rank);
  for (int s = 0; s < 5; ++s) {
    const StepRecord a = single.step(), b = parallel.step();
    EXPECT_EQ(a.loss, b.loss) << "step " << a.step;
    EXPECT_EQ(a.grad_norm, b.grad_norm) << "step " << a.step;
  }
  const TrainerState a = single.state(), b = parallel.state();
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.adam_m, b.adam_m);
  EXPECT_EQ(a.adam_v, b.adam_v);
  ASSERT_EQ(hook_calls.size(), 10u);
  EXPECT_EQ(hook_calls[0], "train.after_backward@cpu.host");
  EXPECT_EQ(hook_calls[1], "comm.before_all_reduce@cpu.host");
}

TEST(DataParallel, OneRankRunIsTheSingleDeviceRunBitForBitAndCallsTheAllReduceHook) {
  expect_one_rank_run_is_the_single_device_run(WeightPolicy::kShard);
  expect_one_rank_run_is_the_single_device_run(WeightPolicy::kCheck);
}

// Two ranks in threads; rank 1's weights differ from rank 0's in one bit.
// Returns each rank's error message ("" when none) and its weights after.
struct AgreeOutcome {
  std::string error[2];
  std::vector<float> weights[2];
};
AgreeOutcome agree_with_one_bit_flipped(WeightPolicy policy) {
  AgreeOutcome out;
  comm::CommConfig config;
  config.timeout_seconds = 30;
  const comm::UniqueId id = comm::Communicator::create_unique_id(config);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      CpuRuntime rt;
      std::vector<float> w{1.0f, 2.0f, 3.0f, 4.0f};
      if (r == 1) {
        uint32_t bits;
        std::memcpy(&bits, &w[2], 4);
        bits ^= 1;
        std::memcpy(&w[2], &bits, 4);
      }
      Tensor params(rt.device, DType::kF32, {4}), m(rt.device, DType::kF32, {4}),
          v(rt.device, DType::kF32, {4});
      for (Tensor* t : {&params, &m, &v}) t->copy_from_host(w.data());
      try {
        comm::Communicator comm(id, r, 2, config);
        DataParallelRank rank(comm, 2, policy);
        rank.agree_weights(params, m, v, 7);
        if (rank.weight_syncs() != (policy == WeightPolicy::kSyncFromRank0 ? 1 : 0))
          out.error[r] = "unexpected sync count";
      } catch (const Error& e) {
        out.error[r] = e.message();
      }
      out.weights[r] = params.to_vector<float>();
    });
  for (std::thread& t : threads) t.join();
  return out;
}

TEST(DataParallel, WeightsDifferingInOneBitEndTheJobNamingTheRankAndStep) {
  const AgreeOutcome out = agree_with_one_bit_flipped(WeightPolicy::kCheck);
  for (const std::string& e : out.error)
    EXPECT_NE(e.find("after step 7 the weights of rank(s) 1 differ from rank 0's"),
              std::string::npos)
        << e;
}

TEST(DataParallel, WeightsDifferingInOneBitUnderTheShardedOptimizerAreReportedAsCorruption) {
  const AgreeOutcome out = agree_with_one_bit_flipped(WeightPolicy::kShard);
  for (const std::string& e : out.error)
    EXPECT_NE(e.find("after step 7 the weights of rank(s) 1 differ from rank 0's, though the "
                     "sharded optimizer gave every rank the same bits"),
              std::string::npos)
        << e;
}

TEST(DataParallel, WeightsDifferingInOneBitAreReplacedByRank0sUnderSync) {
  const AgreeOutcome out = agree_with_one_bit_flipped(WeightPolicy::kSyncFromRank0);
  EXPECT_EQ(out.error[0], "");
  EXPECT_EQ(out.error[1], "");
  EXPECT_EQ(out.weights[1], out.weights[0]);
  EXPECT_EQ(out.weights[0], (std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f}));
}

}  // namespace
}  // namespace polychip::training
