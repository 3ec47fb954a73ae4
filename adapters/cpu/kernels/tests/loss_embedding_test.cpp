// cross_entropy and embedding: values, both index dtypes, deterministic
// accumulation, and out-of-range indices as clear INVALID_ARGUMENT errors
// that leave the outputs untouched.
#include <cmath>

#include "kernel_test_util.hpp"

namespace polychip::testing {
namespace {

TEST_F(CpuKernelTest, CrossEntropyForwardAndBackward) {
  const double l3 = std::log(3.0);
  for (DType idx : {DType::kI64, DType::kI32}) {
    auto logits = run.make(DType::kF64, {2, 3}, {0, 0, 0, l3, 0, 0});
    auto targets = run.make(idx, {2}, {2, 0});
    auto loss = run.empty(DType::kF32, {2});
    run.call("cross_entropy", {logits, targets, loss});
    // Row 1: logsumexp = log 3; row 2: log(3 + 2) - log 3.
    EXPECT_TRUE(same_values(run.values(loss), rounded(DType::kF32, {l3, std::log(5.0) - l3})));
    auto dloss = run.make(DType::kF32, {2}, {1, 2});
    auto dlogits = run.empty(DType::kF64, {2, 3});
    run.call("cross_entropy_backward", {logits, targets, dloss, dlogits});
    EXPECT_TRUE(near_values(run.values(dlogits),
                            {1.0 / 3, 1.0 / 3, -2.0 / 3, 2 * (0.6 - 1), 0.4, 0.4}, 1e-15));
  }
}

TEST_F(CpuKernelTest, CrossEntropyTargetOutOfRangeIsAnError) {
  auto logits = run.make(DType::kF32, {2, 3}, {0, 0, 0, 0, 0, 0});
  auto loss = run.make(DType::kF32, {2}, {-7, -7});
  for (double bad : {3.0, -1.0}) {
    auto targets = run.make(DType::kI64, {2}, {0, bad});
    try {
      run.call("cross_entropy", {logits, targets, loss});
      FAIL() << "no error for target " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(e.message().find("'targets'[1]"), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("outside [0, 3)"), std::string::npos) << e.message();
    }
    EXPECT_TRUE(same_values(run.values(loss), {-7, -7}));  // nothing written
  }
}

TEST_F(CpuKernelTest, EmbeddingGathersRows) {
  for (DType idx : {DType::kI64, DType::kI32}) {
    auto ids = run.make(idx, {3}, {2, 0, 2});
    auto weight = run.make(DType::kBF16, {3, 2}, {1, 2, 3, 4, 5, 6});
    auto out = run.empty(DType::kBF16, {3, 2});
    run.call("embedding", {ids, weight, out});
    EXPECT_TRUE(same_values(run.values(out), {5, 6, 1, 2, 5, 6}));
  }
}

TEST_F(CpuKernelTest, EmbeddingIdOutOfRangeIsAnError) {
  auto ids = run.make(DType::kI32, {2}, {1, 4});
  auto weight = run.make(DType::kF32, {4, 1}, {1, 2, 3, 4});
  auto out = run.make(DType::kF32, {2, 1}, {-7, -7});
  try {
    run.call("embedding", {ids, weight, out});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("'ids'[1] = 4 is outside [0, 4)"), std::string::npos) << e.message();
  }
  EXPECT_TRUE(same_values(run.values(out), {-7, -7}));
  auto dweight = run.make(DType::kF32, {4, 1}, {-7, -7, -7, -7});
  EXPECT_THROW(run.call("embedding_backward", {ids, out, dweight}), Error);
  EXPECT_TRUE(same_values(run.values(dweight), {-7, -7, -7, -7}));
}

TEST_F(CpuKernelTest, EmbeddingBackwardAccumulatesWideAndRoundsOnce) {
  // Row 1 receives 1, 2^-11, 2^-11: f16 accumulation would give 1.
  auto ids = run.make(DType::kI64, {4}, {1, 1, 3, 1});
  auto dout = run.make(DType::kF16, {4, 1}, {1, 0x1p-11, 5, 0x1p-11});
  auto dweight = run.empty(DType::kF16, {4, 1});
  run.call("embedding_backward", {ids, dout, dweight});
  EXPECT_TRUE(same_values(run.values(dweight), {0, 1 + 0x1p-10, 0, 5}));
}

}  // namespace
}  // namespace polychip::testing
