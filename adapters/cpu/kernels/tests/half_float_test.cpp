// The kernels' fast 16-bit conversions agree bit for bit with the HAL's
// reference conversions (polychip/dtype.hpp).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "half_float.hpp"
#include "polychip/dtype.hpp"

namespace polychip::cpu {
namespace {

TEST(HalfFloat, EveryHalfWidensExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = f16_bits_to_f64(static_cast<uint16_t>(h));
    const float got = half_bits_to_float(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << h;
    }
  }
}

TEST(HalfFloat, FloatNarrowingMatchesReferenceOnAFloatSweep) {
  // Every 1021st float bit pattern, plus the neighbours of every f16/bf16
  // rounding boundary near 1 (halfway cases).
  int mismatches = 0;
  for (uint64_t b = 0; b < (1ull << 32); b += 1021) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(b));
    if (float_to_half_bits(f) != f64_to_f16_bits(f)) ++mismatches;
    if (float_to_bf16_bits(f) != f64_to_bf16_bits(f)) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
  // Ties: 1 + 2^-11 -> 1 (even), 1 + 3 * 2^-11 -> 1 + 2^-9; bf16 likewise.
  EXPECT_EQ(float_to_half_bits(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);  // rounds up to Inf
  EXPECT_EQ(float_to_half_bits(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(0x1p-25f), 0x0000);  // tie to even zero
  EXPECT_EQ(float_to_half_bits(0x1.8p-25f), 0x0001);
}

TEST(HalfFloat, DoubleNarrowingRoundsOnceLikeTheReference) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int> exponent(-150, 130);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  int mismatches = 0;
  for (int i = 0; i < 200000; ++i) {
    const double d = std::ldexp(mantissa(rng), exponent(rng)) * (i % 2 ? -1 : 1);
    if (double_to_half_bits(d) != f64_to_f16_bits(d)) ++mismatches;
    if (double_to_bf16_bits(d) != f64_to_bf16_bits(d)) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
  // Just above a tie in double, which a double -> float -> half path would
  // round to the tie and then to even (wrong).
  const double above_tie = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(double_to_half_bits(above_tie), 0x3c01);
  EXPECT_EQ(double_to_bf16_bits(1.0 + 0x1p-8 + 0x1p-40), 0x3f81);
  EXPECT_EQ(double_to_half_bits(1e300), 0x7c00);
  EXPECT_EQ(double_to_bf16_bits(-1e300), 0xff80);
  EXPECT_EQ(double_to_bf16_bits(1e-300), 0x0000);
  EXPECT_EQ(double_to_half_bits(NAN) & 0x7fff, 0x7e00);
}

}  // namespace
}  // namespace polychip::cpu
