// Data parallelism in process (libraries, a communicator per thread): the
// batch shares, a one-rank run equal to the single-device run bit for bit
// with `comm.before_all_reduce` called, and the weight agreement (a one-bit
// difference ends the job, or is replaced by rank 0's weights).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "data_parallel.hpp"
#include "polychip/error.hpp"
#include "runtime_fixture.hpp"
#include "trainer.hpp"

namespace polychip::training {
namespace {

TEST(DataParallel, UniformSharesCoverTheBatchInContiguousRowsDifferingByAtMostOne) {
  for (int ranks = 1; ranks <= 8; ++ranks) {
    int64_t next = 0;
    for (int r = 0; r < ranks; ++r) {
      const BatchShare s = uniform_batch_share(8, r, ranks);
      EXPECT_EQ(s.first_row, next);
      EXPECT_TRUE(s.rows == 8 / ranks || s.rows == 8 / ranks + 1);
      next += s.rows;
    }
    EXPECT_EQ(next, 8);
  }
  EXPECT_EQ(uniform_batch_share(8, 2, 3).rows, 2);  // 3, 3, 2
  EXPECT_THROW(uniform_batch_share(2, 0, 3), Error);
  EXPECT_THROW(uniform_batch_share(8, 3, 3), Error);
}

std::vector<std::string> hook_calls;
polychip_status record_hook(const polychip_hook_args* a) {
  hook_calls.push_back(std::string(a->hook_point) + "@" + a->device_type);
  return POLYCHIP_OK;
}

TEST(DataParallel, OneRankRunIsTheSingleDeviceRunBitForBitAndCallsTheAllReduceHook) {
  const TrainConfig config = train_preset("tiny");
  CpuRuntime single_rt;
  Trainer single(config, single_rt.ops);
  CpuRuntime rt;
  hook_calls.clear();
  for (const char* point : {"train.after_backward", "comm.before_all_reduce"})
    rt.runtime.dispatcher().register_hook("cpu.host", point, &record_hook, "dp_test");
  comm::Communicator comm(comm::Communicator::create_unique_id(), 0, 1);
  DataParallelRank rank(comm, config.batch_size);
  Trainer parallel(config, rt.ops, &rank);
  for (int s = 0; s < 5; ++s) {
    const StepRecord a = single.step(), b = parallel.step();
    EXPECT_EQ(a.loss, b.loss) << "step " << a.step;
    EXPECT_EQ(a.grad_norm, b.grad_norm) << "step " << a.step;
  }
  EXPECT_EQ(single.state().params, parallel.state().params);
  ASSERT_EQ(hook_calls.size(), 10u);
  EXPECT_EQ(hook_calls[0], "train.after_backward@cpu.host");
  EXPECT_EQ(hook_calls[1], "comm.before_all_reduce@cpu.host");
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

TEST(DataParallel, WeightsDifferingInOneBitAreReplacedByRank0sUnderSync) {
  const AgreeOutcome out = agree_with_one_bit_flipped(WeightPolicy::kSyncFromRank0);
  EXPECT_EQ(out.error[0], "");
  EXPECT_EQ(out.error[1], "");
  EXPECT_EQ(out.weights[1], out.weights[0]);
  EXPECT_EQ(out.weights[0], (std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f}));
}

}  // namespace
}  // namespace polychip::training
