// Reductions along an axis: values, NaN rules, index dtypes, strides and
// one rounding of f16/bf16 sums.
#include <cmath>

#include "kernel_test_util.hpp"

namespace polychip::testing {
namespace {

polychip_op_attrs axis_attrs(OpRunner& run, const char* op, int64_t axis) {
  auto a = run.attrs(op);
  a.ints[attr::kAxis] = axis;
  return a;
}

TEST_F(CpuKernelTest, SumMeanMaxAlongEachAxis) {
  for (DType dt : kFloatDTypes) {
    auto x = run.make(dt, {2, 3}, {1, 2, 3, 4, 5, 6});
    auto rows = run.empty(dt, {2, 1}), cols = run.empty(dt, {1, 3});
    run.call("reduce_sum", {x, rows}, axis_attrs(run, "reduce_sum", -1));
    EXPECT_TRUE(same_values(run.values(rows), {6, 15})) << dtype_name(dt);
    run.call("reduce_sum", {x, cols}, axis_attrs(run, "reduce_sum", 0));
    EXPECT_TRUE(same_values(run.values(cols), {5, 7, 9}));
    run.call("reduce_mean", {x, rows}, axis_attrs(run, "reduce_mean", 1));
    EXPECT_TRUE(same_values(run.values(rows), {2, 5}));
    run.call("reduce_max", {x, cols}, axis_attrs(run, "reduce_max", 0));
    EXPECT_TRUE(same_values(run.values(cols), {4, 5, 6}));
  }
}

TEST_F(CpuKernelTest, HalfSumAccumulatesWideAndRoundsOnce) {
  // Sequential f16 accumulation would give 1 (each 2^-11 is a tie to even).
  auto x = run.make(DType::kF16, {3}, {1, 0x1p-11, 0x1p-11});
  auto y = run.empty(DType::kF16, {1});
  run.call("reduce_sum", {x, y});
  EXPECT_TRUE(same_values(run.values(y), {1 + 0x1p-10}));
}

TEST_F(CpuKernelTest, MaxAndArgmaxNaNRules) {
  auto x = run.make(DType::kF32, {2, 4}, {1, 7, 7, 2, 3, NAN, 9, NAN});
  auto m = run.empty(DType::kF32, {2, 1});
  run.call("reduce_max", {x, m});
  EXPECT_TRUE(same_values(run.values(m), {7, NAN}));
  for (DType idx : {DType::kI64, DType::kI32}) {
    auto i = run.empty(idx, {2, 1});
    run.call("argmax", {x, i});
    EXPECT_TRUE(same_values(run.values(i), {1, 1})) << dtype_name(idx);  // first max; first NaN
  }
}

TEST_F(CpuKernelTest, L2NormIncludingOverflowSafeF64) {
  auto x = run.make(DType::kF32, {2, 2}, {3, 4, -5, 12});
  auto y = run.empty(DType::kF32, {2, 1});
  run.call("l2_norm", {x, y});
  EXPECT_TRUE(same_values(run.values(y), {5, 13}));
  auto big = run.make(DType::kF64, {2}, {3e200, 4e200});
  auto yb = run.empty(DType::kF64, {1});
  run.call("l2_norm", {big, yb});
  EXPECT_NEAR(run.values(yb)[0], 5e200, 1e186);
  auto tiny = run.make(DType::kF64, {2}, {3e-200, 4e-200});
  run.call("l2_norm", {tiny, yb});
  EXPECT_NEAR(run.values(yb)[0], 5e-200, 1e-214);
}

TEST_F(CpuKernelTest, ReductionsOnStridedViews) {
  // x = transpose of a row-major [3, 2] buffer -> [2, 3] = [[1,2,3],[4,5,6]];
  // y written into every other element of a 4-element buffer.
  auto buf = run.make(DType::kF64, {3, 2}, {1, 4, 2, 5, 3, 6});
  auto ybuf = run.empty(DType::kF64, {4});
  TensorView x(run.device(), buf.buffer().handle(), DType::kF64, {2, 3}, {1, 2});
  TensorView y(run.device(), ybuf.buffer().handle(), DType::kF64, {2, 1}, {2, 1});
  run.call("reduce_sum", {x, y});
  EXPECT_TRUE(same_values(run.values(ybuf), {6, NAN, 15, NAN}));
  auto idx = run.empty(DType::kI64, {1, 3});
  run.call("argmax", {x, idx}, axis_attrs(run, "argmax", 0));
  EXPECT_TRUE(same_values(run.values(idx), {1, 1, 1}));
}

TEST_F(CpuKernelTest, RankThreeMiddleAxisAndEmptyLanes) {
  std::vector<double> v(24);
  for (int i = 0; i < 24; ++i) v[i] = i;
  auto x = run.make(DType::kF32, {2, 3, 4}, v);
  auto y = run.empty(DType::kF32, {2, 1, 4});
  run.call("reduce_sum", {x, y}, axis_attrs(run, "reduce_sum", 1));
  EXPECT_TRUE(same_values(run.values(y), {12, 15, 18, 21, 48, 51, 54, 57}));
  auto e = run.make(DType::kF32, {2, 0}, {});
  auto s = run.empty(DType::kF32, {2, 1});
  run.call("reduce_sum", {e, s});
  EXPECT_TRUE(same_values(run.values(s), {0, 0}));
  run.call("reduce_mean", {e, s});
  EXPECT_TRUE(same_values(run.values(s), {NAN, NAN}));
}

}  // namespace
}  // namespace polychip::testing
