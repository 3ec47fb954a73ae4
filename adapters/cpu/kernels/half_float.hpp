// Fast, bit-exact conversions between f32/f64 and the 16-bit floats.
// Narrowing rounds to nearest, ties to even, exactly once (a double goes
// through a round-to-odd float first, which keeps the final rounding
// correct); NaN becomes the canonical quiet NaN with its sign, as
// polychip/dtype.hpp does.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace polychip::cpu {

// Storage types of the 16-bit floats, distinct so templates can tell them apart.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  if (em >= 0x7c00u)  // Inf / NaN
    return std::bit_cast<float>(sign | 0x7f800000u | ((em & 0x3ffu) << 13));
  if (em >= 0x0400u)  // normal: rebias the exponent (15 -> 127)
    return std::bit_cast<float>(sign | ((em << 13) + 0x38000000u));
  const float v = static_cast<float>(em) * 0x1p-24f;  // subnormal, exact
  return sign ? -v : v;
}

inline float bf16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (incl. Inf) rounds to Inf
  if (x < 0x38800000u) {
    // Below 2^-14: f16 subnormal. Adding 0.5 puts the value's 2^-24 units in
    // the low mantissa bits, rounded by the FPU (RNE).
    const float v = std::bit_cast<float>(x) + 0.5f;
    return sign | static_cast<uint16_t>(std::bit_cast<uint32_t>(v) - 0x3f000000u);
  }
  const uint32_t odd = (x >> 13) & 1u;
  x += 0xc8000fffu + odd;  // rebias (127 -> 15) and round to nearest even
  return sign | static_cast<uint16_t>(x >> 13);
}

inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7fc0u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// `d` rounded to float with round-to-odd: truncate, then set the last bit
// if anything was dropped. A later RNE to a format at least 2 bits
// narrower than float is then the correct rounding of `d`.
inline float round_to_odd_float(double d) {
  float f = static_cast<float>(d);
  if (static_cast<double>(f) != d && !std::isnan(d)) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
    f = std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
  }
  return f;
}

inline uint16_t double_to_half_bits(double d) { return float_to_half_bits(round_to_odd_float(d)); }
inline uint16_t double_to_bf16_bits(double d) { return float_to_bf16_bits(round_to_odd_float(d)); }

}  // namespace polychip::cpu
