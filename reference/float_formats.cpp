#include "reference/float_formats.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip::reference {

uint32_t float_bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
float float_from_bits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

float round_to_tf32(float x, Tf32Rounding mode) {
  if (!std::isfinite(x)) return x;
  uint32_t b = float_bits(x);
  // Sign-magnitude: adding half of the dropped range to the magnitude
  // rounds ties away from zero, one less than half when the kept last bit
  // is 0 rounds them to even; a carry moves into the exponent (and from the
  // largest binade into Inf) as it should.
  if (mode == Tf32Rounding::kNearestTiesAway) b += 0x1000u;
  if (mode == Tf32Rounding::kNearestEven) b += 0x0FFFu + ((b >> 13) & 1u);
  return float_from_bits(b & 0xFFFFE000u);
}

uint16_t float_to_bf16_bits(float x) {
  uint32_t b = float_bits(x);
  if (std::isnan(x)) return static_cast<uint16_t>((b >> 16) | 0x0040u);
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}
float bf16_bits_to_float(uint16_t bits) {
  return float_from_bits(static_cast<uint32_t>(bits) << 16);
}

uint16_t float_to_f16_bits(float x) {
  uint32_t b = float_bits(x);
  uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  uint32_t mag = b & 0x7FFFFFFFu;
  if (mag > 0x7F800000u)  // NaN: quiet, keep the top payload bits
    return static_cast<uint16_t>(sign | 0x7E00u | ((mag >> 13) & 0x3FFu));
  if (mag >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to Inf (and Inf)
  if (mag >= 0x38800000u) {                       // a normal half (>= 2^-14)
    uint32_t rounded = mag + 0xFFFu + ((mag >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  // Subnormal half: multiples of 2^-24. Scaling by 2^24 is exact; nearbyint
  // rounds ties to even; 1024 becomes the smallest normal, as it should.
  float scaled = std::ldexp(float_from_bits(mag), 24);
  return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
}

float f16_bits_to_float(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1Fu, mant = bits & 0x3FFu;
  if (exp == 0x1F) return float_from_bits(sign | 0x7F800000u | (mant << 13));
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return float_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

namespace {

struct Format {
  int mantissa_bits;  // stored fraction bits
  int min_exponent;   // exponent of the smallest normal
  double max_finite;
  bool overflow_to_nan;  // no Inf in the format
};

Format format_of(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return {23, -126, std::numeric_limits<float>::max(), false};
    case DType::kF16:
      return {10, -14, 65504.0, false};
    case DType::kBF16:
      return {7, -126, 0x1.FEp127, false};
    case DType::kF8E4M3:
      return {3, -6, 448.0, true};
    case DType::kF8E5M2:
      return {2, -14, 57344.0, false};
    default:
      throw_error(
          StatusCode::kInvalidArgument,
          fmt::format("reference: dtype {} is not a narrow floating format", dtype_name(dtype)));
  }
}

}  // namespace

double round_to(DType dtype, double x) {
  if (dtype == DType::kF64 || !std::isfinite(x) || x == 0) {
    if (std::isinf(x) && dtype == DType::kF8E4M3) return std::numeric_limits<double>::quiet_NaN();
    return x;
  }
  Format f = format_of(dtype);
  int e = std::max(std::ilogb(x), f.min_exponent);
  double quantum = std::ldexp(1.0, e - f.mantissa_bits);
  double r = std::nearbyint(x / quantum) * quantum;  // x / quantum is exact: power of two
  if (std::fabs(r) > f.max_finite)
    return f.overflow_to_nan ? std::numeric_limits<double>::quiet_NaN()
                             : std::copysign(INFINITY, x);
  return r;
}

double round_float_to(DType dtype, float x) {
  switch (dtype) {
    case DType::kF64:
    case DType::kF32:
      return x;
    case DType::kBF16:
      return bf16_bits_to_float(float_to_bf16_bits(x));
    case DType::kF16:
      return f16_bits_to_float(float_to_f16_bits(x));
    default:
      return round_to(dtype, x);
  }
}

}  // namespace polychip::reference
