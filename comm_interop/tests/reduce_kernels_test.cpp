// The host reduction kernels of the collectives (algorithms/reduce_kernels.hpp,
// docs/comm.md): every op on every accumulation type, integer wrap-around,
// NaN in min/max, the f16/bf16 widening and final rounding, and the bounds
// of every loop (an element past `count` stays untouched).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/reduce_kernels.hpp"
#include "polychip/dtype.hpp"
#include "polychip/error.hpp"

using namespace polychip;
using namespace polychip::comm;

namespace {

template <typename T>
std::vector<T> reduced(DType type, ReduceOp op, const std::vector<T>& a, const std::vector<T>& b) {
  // One element more than `count`: the kernel must leave it alone.
  std::vector<T> out(a.size() + 1, T{42});
  reduce_function(type, op)(out.data(), a.data(), b.data(), a.size());
  EXPECT_EQ(out.back(), T{42}) << "wrote past count";
  out.pop_back();
  return out;
}

template <typename T>
void expect_every_op(DType type) {
  SCOPED_TRACE(dtype_name(type));
  const std::vector<T> a{3, -2, 7, 0}, b{5, -6, 7, -1};
  EXPECT_EQ(reduced(type, ReduceOp::kSum, a, b), (std::vector<T>{8, -8, 14, -1}));
  // kAvg accumulates as a sum; finalize_reduction divides.
  EXPECT_EQ(reduced(type, ReduceOp::kAvg, a, b), (std::vector<T>{8, -8, 14, -1}));
  EXPECT_EQ(reduced(type, ReduceOp::kProd, a, b), (std::vector<T>{15, 12, 49, 0}));
  EXPECT_EQ(reduced(type, ReduceOp::kMin, a, b), (std::vector<T>{3, -6, 7, -1}));
  EXPECT_EQ(reduced(type, ReduceOp::kMax, a, b), (std::vector<T>{5, -2, 7, 0}));
  // The same with the operands swapped: min/max do not depend on the order.
  EXPECT_EQ(reduced(type, ReduceOp::kMin, b, a), (std::vector<T>{3, -6, 7, -1}));
  EXPECT_EQ(reduced(type, ReduceOp::kMax, b, a), (std::vector<T>{5, -2, 7, 0}));
}

TEST(ReduceKernels, EveryOpOnEveryAccumulationType) {
  expect_every_op<float>(DType::kF32);
  expect_every_op<double>(DType::kF64);
  expect_every_op<int32_t>(DType::kI32);
  expect_every_op<int64_t>(DType::kI64);
}

TEST(ReduceKernels, IntegerSumAndProductWrapLikeTwosComplement) {
  using I32 = std::numeric_limits<int32_t>;
  using I64 = std::numeric_limits<int64_t>;
  EXPECT_EQ(reduced<int32_t>(DType::kI32, ReduceOp::kSum, {I32::max(), I32::min()}, {1, -1}),
            (std::vector<int32_t>{I32::min(), I32::max()}));
  EXPECT_EQ(reduced<int32_t>(DType::kI32, ReduceOp::kProd, {65536, I32::max()}, {65536, 2}),
            (std::vector<int32_t>{0, -2}));
  EXPECT_EQ(reduced<int64_t>(DType::kI64, ReduceOp::kSum, {I64::max(), I64::min()}, {1, -1}),
            (std::vector<int64_t>{I64::min(), I64::max()}));
  EXPECT_EQ(reduced<int64_t>(DType::kI64, ReduceOp::kProd, {int64_t{1} << 32, I64::max()},
                             {int64_t{1} << 32, 2}),
            (std::vector<int64_t>{0, -2}));
}

// As reduce_max (docs/reference-numerics.md): NaN wins, whichever rank holds
// it, so the result does not depend on the order a ring reduces in.
template <typename T>
void expect_nan_wins(DType type) {
  SCOPED_TRACE(dtype_name(type));
  const T nan = std::numeric_limits<T>::quiet_NaN();
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
    for (const std::vector<T>& got :
         {reduced<T>(type, op, {nan, 1, -1}, {1, nan, nan}), reduced<T>(type, op, {nan}, {nan})}) {
      for (T v : got) EXPECT_TRUE(std::isnan(v)) << reduce_op_name(op) << " gave " << v;
    }
  }
}

TEST(ReduceKernels, MinAndMaxLetNaNWinWhicheverOperandHoldsIt) {
  expect_nan_wins<float>(DType::kF32);
  expect_nan_wins<double>(DType::kF64);
}

TEST(ReduceKernels, OutputMayAliasEitherInput) {
  std::vector<float> a{1, 2, 3}, b{10, 20, 30};
  ReduceFn sum = reduce_function(DType::kF32, ReduceOp::kSum);
  sum(a.data(), a.data(), b.data(), a.size());
  EXPECT_EQ(a, (std::vector<float>{11, 22, 33}));
  sum(b.data(), a.data(), b.data(), b.size());
  EXPECT_EQ(b, (std::vector<float>{21, 42, 63}));
}

TEST(ReduceKernels, OnlyHalfPrecisionAccumulatesWider) {
  EXPECT_EQ(accumulation_type(DType::kF16), DType::kF32);
  EXPECT_EQ(accumulation_type(DType::kBF16), DType::kF32);
  for (DType t : {DType::kF32, DType::kF64, DType::kI32, DType::kI64}) {
    EXPECT_EQ(accumulation_type(t), t) << dtype_name(t);
  }
  // f16/bf16 never reach a kernel: they are widened first.
  EXPECT_THROW(reduce_function(DType::kF16, ReduceOp::kSum), Error);
}

TEST(ReduceKernels, WideningIsExactAndStopsAtCount) {
  const std::vector<uint16_t> half{0x3c00, 0xc500, 0x0001, 0x7bff};  // 1, -5, 2^-24, 65504
  std::vector<float> out(half.size() + 1, 42.0f);
  widen_to_f32(half.data(), DType::kF16, out.data(), half.size());
  EXPECT_EQ(out, (std::vector<float>{1.0f, -5.0f, std::ldexp(1.0f, -24), 65504.0f, 42.0f}));
  const std::vector<uint16_t> bf{0x3f80, 0xc0a0, 0x7f7f};  // 1, -5, the largest finite bf16
  out.assign(bf.size() + 1, 42.0f);
  widen_to_f32(bf.data(), DType::kBF16, out.data(), bf.size());
  EXPECT_EQ(out, (std::vector<float>{1.0f, -5.0f, bf16_bits_to_f32(0x7f7f), 42.0f}));
  EXPECT_THROW(widen_to_f32(half.data(), DType::kF32, out.data(), 1), Error);
}

float float_of_bits(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

// The edges of rounding to f16 (nearest-even): ties, the overflow threshold,
// subnormals, infinities and NaNs whose payload lies below f16's mantissa.
TEST(ReduceKernels, HalfRoundingTiesToEvenAndKeepsInfAndNaN) {
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie, down to even
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie, up to even
  EXPECT_EQ(float_to_half_bits(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);  // the first value that overflows
  EXPECT_EQ(float_to_half_bits(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);      // tie, down to zero
  EXPECT_EQ(float_to_half_bits(3 * std::ldexp(1.0f, -25)), 0x0002);  // tie, up to even
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400);      // smallest normal
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  for (uint32_t nan_bits : {0x7f800001u, 0xffc00000u, 0x7fffffffu}) {
    uint16_t h = float_to_half_bits(float_of_bits(nan_bits));
    EXPECT_TRUE(std::isnan(half_bits_to_float(h))) << std::hex << nan_bits << " -> " << h;
    EXPECT_EQ(h & 0x8000, (nan_bits >> 16) & 0x8000) << std::hex << nan_bits;
  }
}

TEST(ReduceKernels, Bfloat16RoundingTiesToEvenAndKeepsInfAndNaN) {
  EXPECT_EQ(float_to_bfloat16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie, down to even
  EXPECT_EQ(float_to_bfloat16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie, up to even
  EXPECT_EQ(float_to_bfloat16_bits(std::numeric_limits<float>::max()), 0x7f80);  // rounds to Inf
  EXPECT_EQ(float_to_bfloat16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(float_to_bfloat16_bits(-std::numeric_limits<float>::infinity()), 0xff80);
  // A NaN whose payload is all in the low half would truncate to Inf.
  for (uint32_t nan_bits : {0x7f800001u, 0xff800001u, 0x7fc00000u}) {
    uint16_t b = float_to_bfloat16_bits(float_of_bits(nan_bits));
    EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(b))) << std::hex << nan_bits << " -> " << b;
    EXPECT_EQ(b & 0x8000, (nan_bits >> 16) & 0x8000) << std::hex << nan_bits;
  }
}

TEST(ReduceKernels, FinalizeRoundsF32AccumulatorsOnceToHalfPrecision) {
  // 1 + 2^-11 + 2^-12 is above the f16 tie: rounded once it goes up; the
  // average by 2 first and then rounded is still exact in f32.
  const float acc[3] = {1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -12), -3.0f, 1e6f};
  uint16_t out[4] = {0, 0, 0, 0xabcd};
  finalize_reduction(acc, DType::kF32, out, DType::kF16, 3, ReduceOp::kSum, 2);
  EXPECT_EQ(out[0], 0x3c01);
  EXPECT_EQ(out[1], f64_to_f16_bits(-3.0));
  EXPECT_EQ(out[2], 0x7c00);
  EXPECT_EQ(out[3], 0xabcd) << "wrote past count";
  finalize_reduction(acc, DType::kF32, out, DType::kF16, 3, ReduceOp::kAvg, 2);
  EXPECT_EQ(out[0], f64_to_f16_bits((1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -12)) / 2));
  EXPECT_EQ(out[1], f64_to_f16_bits(-1.5));
  EXPECT_EQ(out[2], 0x7c00);
  finalize_reduction(acc, DType::kF32, out, DType::kBF16, 3, ReduceOp::kSum, 2);
  EXPECT_EQ(out[0], 0x3f80);
  EXPECT_EQ(out[1], f64_to_bf16_bits(-3.0));
  EXPECT_EQ(out[2], f64_to_bf16_bits(1e6f));
  finalize_reduction(acc, DType::kF32, out, DType::kBF16, 3, ReduceOp::kAvg, 4);
  EXPECT_EQ(out[1], f64_to_bf16_bits(-0.75));
  EXPECT_EQ(out[2], f64_to_bf16_bits(250000.0));
  EXPECT_EQ(out[3], 0xabcd) << "wrote past count";
}

template <typename T>
void expect_average(DType type, std::vector<T> acc, int ranks, const std::vector<T>& expected) {
  SCOPED_TRACE(dtype_name(type));
  std::vector<T> out(acc.size() + 1, T{42});
  finalize_reduction(acc.data(), type, out.data(), type, acc.size(), ReduceOp::kAvg, ranks);
  EXPECT_EQ(out.back(), T{42}) << "wrote past count";
  out.pop_back();
  EXPECT_EQ(out, expected);
  // In place, as the algorithms call it.
  finalize_reduction(acc.data(), type, acc.data(), type, acc.size(), ReduceOp::kAvg, ranks);
  EXPECT_EQ(acc, expected);
}

TEST(ReduceKernels, AverageDividesEveryTypeByTheRanks) {
  expect_average<float>(DType::kF32, {1.0f, -6.0f}, 3,
                        {static_cast<float>(1.0 / 3), static_cast<float>(-2.0)});
  expect_average<double>(DType::kF64, {1.0, -6.0}, 3, {1.0 / 3, -2.0});
  expect_average<int32_t>(DType::kI32, {7, -7}, 4, {1, -1});
  expect_average<int64_t>(DType::kI64, {int64_t{1} << 40, -7}, 2, {int64_t{1} << 39, -3});
}

TEST(ReduceKernels, FinalizeCopiesOtherOpsAndRefusesMismatchedTypes) {
  const int64_t acc[3] = {5, -6, int64_t{1} << 40};
  int64_t out[4] = {0, 0, 0, 42};
  finalize_reduction(acc, DType::kI64, out, DType::kI64, 3, ReduceOp::kMax, 4);
  EXPECT_EQ(std::vector<int64_t>(out, out + 4),
            (std::vector<int64_t>{5, -6, int64_t{1} << 40, 42}));
  EXPECT_THROW(finalize_reduction(acc, DType::kI64, out, DType::kI32, 3, ReduceOp::kSum, 1), Error);
  // f16 is never an accumulator: there is nothing to average it in.
  uint16_t half[1] = {0x3c00};
  EXPECT_THROW(finalize_reduction(half, DType::kF16, half, DType::kF16, 1, ReduceOp::kAvg, 2),
               Error);
}

}  // namespace
