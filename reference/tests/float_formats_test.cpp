// The emulation's roundings, bit-exactly on hand-made inputs: ties, carries
// into the exponent, overflow, subnormals, NaN and Inf.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "polychip/dtype.hpp"
#include "reference/float_formats.hpp"

namespace polychip::reference {
namespace {

uint32_t tf32(uint32_t bits, Tf32Rounding mode = Tf32Rounding::kNearestEven) {
  return float_bits(round_to_tf32(float_from_bits(bits), mode));
}
uint16_t bf16(uint32_t bits) { return float_to_bf16_bits(float_from_bits(bits)); }
uint16_t f16(uint32_t bits) { return float_to_f16_bits(float_from_bits(bits)); }

TEST(Tf32RoundingTest, TiesGoToEvenByDefault) {
  EXPECT_EQ(tf32(0x3F801000u), 0x3F800000u);  // 1 + 2^-11: tie, 1 is even
  EXPECT_EQ(tf32(0xBF801000u), 0xBF800000u);
  EXPECT_EQ(tf32(0x3F803000u), 0x3F804000u);  // 1 + 3 * 2^-11: tie, up to even
  EXPECT_EQ(tf32(0xBF803000u), 0xBF804000u);
  EXPECT_EQ(tf32(0x3F800FFFu), 0x3F800000u);  // just below the tie
  EXPECT_EQ(tf32(0x3F801001u), 0x3F802000u);  // just above
  EXPECT_EQ(tf32(0x3F802000u), 0x3F802000u);  // already TF32
}

TEST(Tf32RoundingTest, TiesAwayGoAwayFromZero) {
  const auto away = Tf32Rounding::kNearestTiesAway;
  EXPECT_EQ(tf32(0x3F801000u, away), 0x3F802000u);  // 1 + 2^-11: away (RNE keeps 1)
  EXPECT_EQ(tf32(0xBF801000u, away), 0xBF802000u);  // negative tie: away from zero too
  EXPECT_EQ(tf32(0x3F803000u, away), 0x3F804000u);
  EXPECT_EQ(tf32(0x3F800FFFu, away), 0x3F800000u);
  EXPECT_EQ(tf32(0x00001000u, away), 0x00002000u);  // subnormal tie
}

TEST(Tf32RoundingTest, CarriesIntoExponentAndOverflows) {
  EXPECT_EQ(tf32(0x3FFFF000u), 0x40000000u);  // 2 - 2^-12 -> 2
  EXPECT_EQ(tf32(0x7F7FFFFFu), 0x7F800000u);  // FLT_MAX -> +Inf
  EXPECT_EQ(tf32(0xFF7FFFFFu), 0xFF800000u);
  EXPECT_EQ(tf32(0x7F7FEFFFu), 0x7F7FE000u);  // the largest TF32 stays
}

TEST(Tf32RoundingTest, SubnormalsZerosNanInf) {
  EXPECT_EQ(tf32(0x00001000u), 0x00000000u);  // subnormal tie, to even
  EXPECT_EQ(tf32(0x00003000u), 0x00004000u);
  EXPECT_EQ(tf32(0x00000FFFu), 0x00000000u);
  EXPECT_EQ(tf32(0x80000FFFu), 0x80000000u);  // sign kept on underflow
  EXPECT_EQ(tf32(0x80000000u), 0x80000000u);
  EXPECT_EQ(tf32(0x7F800000u), 0x7F800000u);
  EXPECT_EQ(tf32(0xFF800000u), 0xFF800000u);
  EXPECT_TRUE(std::isnan(round_to_tf32(float_from_bits(0x7F800001u))));  // low-bit payload
  EXPECT_TRUE(std::isnan(round_to_tf32(float_from_bits(0xFFFFFFFFu))));
}

TEST(Tf32RoundingTest, TruncationDropsLowBits) {
  EXPECT_EQ(tf32(0x3F801FFFu, Tf32Rounding::kTruncate), 0x3F800000u);
  EXPECT_EQ(tf32(0x7F7FFFFFu, Tf32Rounding::kTruncate), 0x7F7FE000u);
  EXPECT_EQ(tf32(0xBF803000u, Tf32Rounding::kTruncate), 0xBF802000u);
}

TEST(Bf16RoundingTest, TiesToEven) {
  EXPECT_EQ(bf16(0x3F808000u), 0x3F80u);  // 1 + 2^-8: tie, even stays
  EXPECT_EQ(bf16(0x3F818000u), 0x3F82u);  // odd rounds up
  EXPECT_EQ(bf16(0x3F808001u), 0x3F81u);
  EXPECT_EQ(bf16(0x3F807FFFu), 0x3F80u);
  EXPECT_EQ(bf16(0xBF818000u), 0xBF82u);
}

TEST(Bf16RoundingTest, CarriesOverflowSubnormals) {
  EXPECT_EQ(bf16(0x3FFF8000u), 0x4000u);  // carry into the exponent: 2
  EXPECT_EQ(bf16(0x7F7FFFFFu), 0x7F80u);  // FLT_MAX -> Inf
  EXPECT_EQ(bf16(0x7F7F7FFFu), 0x7F7Fu);
  EXPECT_EQ(bf16(0x00008000u), 0x0000u);  // subnormal tie to even (0)
  EXPECT_EQ(bf16(0x00018000u), 0x0002u);  // subnormal tie to even (2)
  EXPECT_EQ(bf16(0x00008001u), 0x0001u);
  EXPECT_EQ(bf16(0x007FFFFFu), 0x0080u);  // largest subnormal -> smallest normal
  EXPECT_EQ(bf16(0x80000000u), 0x8000u);
}

TEST(Bf16RoundingTest, NanStaysNanAndInfStaysInf) {
  // A NaN whose payload lives in the low bits must not round to Inf.
  EXPECT_EQ(bf16(0x7F800001u), 0x7FC0u);
  EXPECT_EQ(bf16(0xFF800001u), 0xFFC0u);
  EXPECT_EQ(bf16(0x7FC00000u), 0x7FC0u);
  EXPECT_EQ(bf16(0x7F800000u), 0x7F80u);
  EXPECT_EQ(bf16(0xFF800000u), 0xFF80u);
  EXPECT_EQ(float_bits(bf16_bits_to_float(0x3F82u)), 0x3F820000u);
}

TEST(F16RoundingTest, TiesOverflowSubnormals) {
  EXPECT_EQ(f16(float_bits(1.0f + 0x1p-11f)), 0x3C00u);      // tie, even
  EXPECT_EQ(f16(float_bits(1.0f + 3 * 0x1p-11f)), 0x3C02u);  // tie, odd up
  EXPECT_EQ(f16(float_bits(65504.0f)), 0x7BFFu);
  EXPECT_EQ(f16(float_bits(65519.996f)), 0x7BFFu);
  EXPECT_EQ(f16(float_bits(65520.0f)), 0x7C00u);  // tie above the max: Inf
  EXPECT_EQ(f16(float_bits(-1e10f)), 0xFC00u);
  EXPECT_EQ(f16(float_bits(0x1p-24f)), 0x0001u);            // smallest subnormal
  EXPECT_EQ(f16(float_bits(0x1p-25f)), 0x0000u);            // tie to even: 0
  EXPECT_EQ(f16(float_bits(3 * 0x1p-25f)), 0x0002u);        // tie to even: 2
  EXPECT_EQ(f16(float_bits(1023.5f * 0x1p-24f)), 0x0400u);  // subnormal carries to normal
  EXPECT_EQ(f16(float_bits(-0.0f)), 0x8000u);
  EXPECT_EQ(f16(0x7F800000u), 0x7C00u);
  EXPECT_EQ(f16(0x7F800001u) & 0x7E00u, 0x7E00u);  // NaN stays (quiet) NaN
  EXPECT_EQ(float_bits(f16_bits_to_float(0x0001u)), float_bits(0x1p-24f));
  EXPECT_EQ(float_bits(f16_bits_to_float(0xFBFFu)), float_bits(-65504.0f));
}

TEST(GenericRoundingTest, Float8Formats) {
  EXPECT_EQ(round_to(DType::kF8E4M3, 448), 448);
  EXPECT_EQ(round_to(DType::kF8E4M3, 464), 448);           // tie to even (1.110b)
  EXPECT_TRUE(std::isnan(round_to(DType::kF8E4M3, 470)));  // no Inf in E4M3FN
  EXPECT_TRUE(std::isnan(round_to(DType::kF8E4M3, INFINITY)));
  EXPECT_EQ(round_to(DType::kF8E4M3, 0x1p-9), 0x1p-9);  // smallest subnormal
  EXPECT_EQ(round_to(DType::kF8E4M3, 0x1p-10), 0);      // tie to even
  EXPECT_EQ(round_to(DType::kF8E5M2, 57344), 57344);
  EXPECT_EQ(round_to(DType::kF8E5M2, 61440), INFINITY);  // tie, odd: up to Inf
  EXPECT_EQ(round_to(DType::kF32, 1 + 0x1p-24), 1);
  EXPECT_EQ(round_to(DType::kF32, 0x1p-150 * 3), 0x1p-148);  // f32 subnormal tie
}

// The bit-level paths, the generic path and the HAL's conversions agree on
// random floats over the whole range (including subnormals, Inf, NaN).
TEST(GenericRoundingTest, AgreesWithBitPathsAndHal) {
  std::mt19937 gen(42);
  std::uniform_int_distribution<uint32_t> bits;
  for (int k = 0; k < 200000; ++k) {
    uint32_t b = bits(gen);
    if (k % 4 == 1) b &= 0x807FFFFFu;                     // f32 subnormals
    if (k % 4 == 2) b = (b & 0x83FFFFFFu) | 0x38000000u;  // near the f16 range
    float x = float_from_bits(b);
    uint16_t hb = float_to_bf16_bits(x), hf = float_to_f16_bits(x);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(bf16_bits_to_float(hb)));
      EXPECT_TRUE(std::isnan(f16_bits_to_float(hf)));
      continue;
    }
    ASSERT_EQ(bf16_bits_to_float(hb), round_to(DType::kBF16, x)) << std::hex << b;
    ASSERT_EQ(f16_bits_to_float(hf), round_to(DType::kF16, x)) << std::hex << b;
    ASSERT_EQ(hb, f64_to_bf16_bits(x)) << std::hex << b;
    ASSERT_EQ(hf, f64_to_f16_bits(x)) << std::hex << b;
  }
}

}  // namespace
}  // namespace polychip::reference
