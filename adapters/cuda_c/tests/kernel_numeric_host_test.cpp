// The CUDA-C kernels' software f16/bf16/f8 conversions (kernels/numeric.cuh),
// compiled for the host, must agree bit for bit with polychip's reference
// conversions (hal dtype.hpp) that the cpu adapter and the oracle use.
#define PC_HOST_EMULATION 1
#include "../kernels/numeric.cuh"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "polychip/dtype.hpp"

namespace {

bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) ||
         std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

// Every value of a format, the midpoints between neighbours (ties), values
// just either side of them, specials and random doubles across the range.
std::vector<double> probes(const std::vector<double>& format_values) {
  std::vector<double> out = {0.0,      -0.0,      1e-300,       -1e-300, 1e300,   -1e300,
                             HUGE_VAL, -HUGE_VAL, std::nan(""), 65504.0, 65520.0, 65519.99,
                             448.0,    464.0,     463.99,       480.0,   57344.0, 61440.0};
  std::vector<double> finite;
  for (double v : format_values)
    if (std::isfinite(v)) finite.push_back(v);
  std::sort(finite.begin(), finite.end());
  for (size_t k = 0; k < finite.size(); ++k) {
    out.push_back(finite[k]);
    if (k + 1 < finite.size()) {
      const double mid = 0.5 * (finite[k] + finite[k + 1]);
      out.push_back(mid);
      out.push_back(std::nextafter(mid, HUGE_VAL));
      out.push_back(std::nextafter(mid, -HUGE_VAL));
    }
  }
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-140, 130);
  for (int k = 0; k < 20000; ++k) {
    const double v =
        std::ldexp(1.0 + std::generate_canonical<double, 53>(rng), static_cast<int>(exponent(rng)));
    out.push_back(k % 2 ? v : -v);
  }
  return out;
}

TEST(KernelNumerics, F16MatchesTheReference) {
  std::vector<double> values;
  for (uint32_t b = 0; b < 65536; ++b) {
    const double ref = polychip::f16_bits_to_f64(static_cast<uint16_t>(b));
    ASSERT_TRUE(same_value(pc_f16_to_double(static_cast<unsigned short>(b)), ref)) << std::hex << b;
    values.push_back(ref);
  }
  for (double v : probes(values))
    ASSERT_EQ(pc_double_to_f16(v), polychip::f64_to_f16_bits(v)) << std::hexfloat << v;
}

TEST(KernelNumerics, Bf16MatchesTheReference) {
  std::vector<double> values;
  for (uint32_t b = 0; b < 65536; ++b) {
    const double ref = polychip::bf16_bits_to_f64(static_cast<uint16_t>(b));
    ASSERT_TRUE(same_value(pc_bf16_to_double(static_cast<unsigned short>(b)), ref))
        << std::hex << b;
    ASSERT_TRUE(same_value(pc_bf16_to_float(static_cast<unsigned short>(b)), ref)) << std::hex << b;
    values.push_back(ref);
  }
  for (double v : probes(values)) {
    ASSERT_EQ(pc_double_to_bf16(v), polychip::f64_to_bf16_bits(v)) << std::hexfloat << v;
    // The f32 fast path agrees whenever the value is an f32.
    const float f = static_cast<float>(v);
    if (static_cast<double>(f) == v || std::isnan(v)) {
      ASSERT_EQ(pc_float_to_bf16(f), polychip::f64_to_bf16_bits(f)) << std::hexfloat << v;
    }
  }
}

TEST(KernelNumerics, Fp8MatchesTheReference) {
  std::vector<double> e4m3, e5m2;
  for (uint32_t b = 0; b < 256; ++b) {
    const double r4 = polychip::f8e4m3_bits_to_f64(static_cast<uint8_t>(b));
    const double r5 = polychip::f8e5m2_bits_to_f64(static_cast<uint8_t>(b));
    ASSERT_TRUE(same_value(pc_decode_small_float(b, 4, 3, false), r4)) << b;
    ASSERT_TRUE(same_value(pc_decode_small_float(b, 5, 2, true), r5)) << b;
    e4m3.push_back(r4);
    e5m2.push_back(r5);
  }
  for (double v : probes(e4m3))
    ASSERT_EQ(pc_double_to_f8e4m3(v), polychip::f64_to_f8e4m3_bits(v)) << std::hexfloat << v;
  for (double v : probes(e5m2))
    ASSERT_EQ(pc_double_to_f8e5m2(v), polychip::f64_to_f8e5m2_bits(v)) << std::hexfloat << v;
}

TEST(KernelNumerics, StoresRoundOnceFromF32) {
  pc_f16 h{};
  pc_store(&h, 1.0f + 0x1p-11f);  // a tie: even mantissa wins
  EXPECT_EQ(h.bits, polychip::f64_to_f16_bits(1.0 + 0x1p-11));
  pc_bf16 b{};
  pc_store(&b, 3.0e38f);
  EXPECT_EQ(b.bits, polychip::f64_to_bf16_bits(3.0e38f));
  EXPECT_EQ(pc_load(&h), static_cast<float>(polychip::f16_bits_to_f64(h.bits)));
}

}  // namespace
