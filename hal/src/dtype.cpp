#include "polychip/dtype.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "polychip/error.hpp"

namespace polychip {
namespace {

// A binary floating-point format narrower than double.
struct Format {
  int exponent_bits;
  int mantissa_bits;
  bool has_infinity;  // false: E4M3FN style, the all-ones pattern is NaN
  uint32_t nan_bits;  // canonical quiet NaN, positive
};

constexpr Format kF16{5, 10, true, 0x7E00};
constexpr Format kBF16{8, 7, true, 0x7FC0};
constexpr Format kE4M3{4, 3, false, 0x7F};
constexpr Format kE5M2{5, 2, true, 0x7E};

uint64_t bits_of(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

uint32_t max_finite_bits(const Format& f) {
  uint32_t all_ones_exp = (1u << f.exponent_bits) - 1;
  uint32_t mant_mask = (1u << f.mantissa_bits) - 1;
  if (f.has_infinity) return ((all_ones_exp - 1) << f.mantissa_bits) | mant_mask;
  return (all_ones_exp << f.mantissa_bits) | (mant_mask - 1);  // S.1111.110
}

// Rounds |value| (finite, non-zero, or anything) to format f: one RNE.
uint32_t encode(double value, const Format& f) {
  const int total = 1 + f.exponent_bits + f.mantissa_bits;
  const uint32_t sign = std::signbit(value) ? 1u << (total - 1) : 0u;
  if (std::isnan(value)) return sign | f.nan_bits;
  const uint32_t overflow =
      f.has_infinity ? ((1u << f.exponent_bits) - 1) << f.mantissa_bits : f.nan_bits;
  if (std::isinf(value)) return sign | overflow;
  if (value == 0) return sign;

  const uint64_t b = bits_of(value);
  int exp = static_cast<int>((b >> 52) & 0x7FF);
  uint64_t sig = b & ((1ull << 52) - 1);
  if (exp == 0) {
    exp = 1;  // double subnormal: no implicit bit
  } else {
    sig |= 1ull << 52;
  }
  const int unbiased = exp - 1023;
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const int min_normal_exp = 1 - bias;
  // Number of low significand bits dropped.
  int shift = 52 - f.mantissa_bits;
  if (unbiased < min_normal_exp) shift += min_normal_exp - unbiased;
  uint64_t q;
  if (shift >= 64) {
    q = 0;
  } else {
    q = sig >> shift;
    const uint64_t rem = sig & ((1ull << shift) - 1);
    const uint64_t half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
  }
  uint64_t out;
  if (unbiased < min_normal_exp) {
    out = q;  // subnormal; a carry into bit mantissa_bits is the smallest normal
  } else {
    out =
        (static_cast<uint64_t>(unbiased + bias) << f.mantissa_bits) + q - (1ull << f.mantissa_bits);
  }
  if (out > max_finite_bits(f)) return sign | overflow;
  return sign | static_cast<uint32_t>(out);
}

double decode(uint32_t bits, const Format& f) {
  const int total = 1 + f.exponent_bits + f.mantissa_bits;
  const bool negative = (bits >> (total - 1)) & 1;
  const uint32_t exp = (bits >> f.mantissa_bits) & ((1u << f.exponent_bits) - 1);
  const uint32_t mant = bits & ((1u << f.mantissa_bits) - 1);
  const uint32_t all_ones = (1u << f.exponent_bits) - 1;
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  double v;
  if (f.has_infinity && exp == all_ones) {
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!f.has_infinity && exp == all_ones && mant == (1u << f.mantissa_bits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), 1 - bias - f.mantissa_bits);
  } else {
    v = std::ldexp(static_cast<double>(mant | (1u << f.mantissa_bits)),
                   static_cast<int>(exp) - bias - f.mantissa_bits);
  }
  return negative ? -v : v;
}

template <typename I>
I saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(std::nearbyint(v));
}

}  // namespace

bool is_valid_dtype(int32_t code) {
  return code >= POLYCHIP_DTYPE_F64 && code < POLYCHIP_DTYPE_COUNT_;
}

size_t dtype_size(DType d) {
  switch (d) {
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kF8E4M3:
    case DType::kF8E5M2:
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      return 1;
  }
  throw_error(StatusCode::kInvalidArgument,
              "unknown dtype code " + std::to_string(static_cast<int>(d)));
}

bool is_floating(DType d) {
  return d == DType::kF64 || d == DType::kF32 || d == DType::kF16 || d == DType::kBF16 ||
         d == DType::kF8E4M3 || d == DType::kF8E5M2;
}

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::kF64:
      return "f64";
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kF8E4M3:
      return "f8e4m3";
    case DType::kF8E5M2:
      return "f8e5m2";
    case DType::kI8:
      return "i8";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kU8:
      return "u8";
    case DType::kBool:
      return "bool";
  }
  return "invalid";
}

DType parse_dtype(std::string_view name) {
  std::string known;
  for (DType d : kAllDTypes) {
    if (dtype_name(d) == name) return d;
    known += (known.empty() ? "" : ", ") + std::string(dtype_name(d));
  }
  throw_error(StatusCode::kInvalidArgument,
              "unknown dtype '" + std::string(name) + "' (known: " + known + ")");
}

uint16_t f64_to_f16_bits(double v) { return static_cast<uint16_t>(encode(v, kF16)); }
uint16_t f64_to_bf16_bits(double v) { return static_cast<uint16_t>(encode(v, kBF16)); }
uint8_t f64_to_f8e4m3_bits(double v) { return static_cast<uint8_t>(encode(v, kE4M3)); }
uint8_t f64_to_f8e5m2_bits(double v) { return static_cast<uint8_t>(encode(v, kE5M2)); }
double f16_bits_to_f64(uint16_t b) { return decode(b, kF16); }
double bf16_bits_to_f64(uint16_t b) { return decode(b, kBF16); }
double f8e4m3_bits_to_f64(uint8_t b) { return decode(b, kE4M3); }
double f8e5m2_bits_to_f64(uint8_t b) { return decode(b, kE5M2); }

double load_as_f64(const void* src, DType d) {
  auto load = [src](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, src, sizeof v);
    return v;
  };
  switch (d) {
    case DType::kF64:
      return load(double{});
    case DType::kF32:
      return load(float{});
    case DType::kF16:
      return f16_bits_to_f64(load(uint16_t{}));
    case DType::kBF16:
      return bf16_bits_to_f64(load(uint16_t{}));
    case DType::kF8E4M3:
      return f8e4m3_bits_to_f64(load(uint8_t{}));
    case DType::kF8E5M2:
      return f8e5m2_bits_to_f64(load(uint8_t{}));
    case DType::kI8:
      return load(int8_t{});
    case DType::kI32:
      return load(int32_t{});
    case DType::kI64:
      return static_cast<double>(load(int64_t{}));
    case DType::kU8:
      return load(uint8_t{});
    case DType::kBool:
      return load(uint8_t{}) != 0 ? 1.0 : 0.0;
  }
  throw_error(StatusCode::kInvalidArgument, "unknown dtype code");
}

void store_from_f64(double value, void* dst, DType d) {
  auto store = [dst](auto v) { std::memcpy(dst, &v, sizeof v); };
  switch (d) {
    case DType::kF64:
      return store(value);
    case DType::kF32:
      return store(static_cast<float>(value));
    case DType::kF16:
      return store(f64_to_f16_bits(value));
    case DType::kBF16:
      return store(f64_to_bf16_bits(value));
    case DType::kF8E4M3:
      return store(f64_to_f8e4m3_bits(value));
    case DType::kF8E5M2:
      return store(f64_to_f8e5m2_bits(value));
    case DType::kI8:
      return store(saturate<int8_t>(value));
    case DType::kI32:
      return store(saturate<int32_t>(value));
    case DType::kI64:
      return store(saturate<int64_t>(value));
    case DType::kU8:
      return store(saturate<uint8_t>(value));
    case DType::kBool:
      return store(static_cast<uint8_t>(value != 0 ? 1 : 0));
  }
  throw_error(StatusCode::kInvalidArgument, "unknown dtype code");
}

double round_to_dtype(double value, DType d) {
  unsigned char buf[8];
  store_from_f64(value, buf, d);
  return load_as_f64(buf, d);
}

}  // namespace polychip
