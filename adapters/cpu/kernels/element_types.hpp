// The floating storage types kernels are instantiated for (double, float,
// Half, BFloat16), their conversions to and from the compute types, and
// the dispatch from a runtime DType to a compiled instantiation.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include "half_float.hpp"
#include "kernel_error.hpp"
#include "polychip/dtype.hpp"

namespace polychip::cpu {

// OK as a polychip_status (lambdas deduce one return type).
inline constexpr polychip_status kOk = POLYCHIP_OK;

inline double to_f64(double v) { return v; }
inline double to_f64(float v) { return v; }
inline double to_f64(Half v) { return half_bits_to_float(v.bits); }
inline double to_f64(BFloat16 v) { return bf16_bits_to_float(v.bits); }

inline float to_f32(float v) { return v; }
inline float to_f32(Half v) { return half_bits_to_float(v.bits); }
inline float to_f32(BFloat16 v) { return bf16_bits_to_float(v.bits); }

// One rounding from double to the storage type.
template <class S>
S from_f64(double v);
template <>
inline double from_f64<double>(double v) {
  return v;
}
template <>
inline float from_f64<float>(double v) {
  return static_cast<float>(v);
}
template <>
inline Half from_f64<Half>(double v) {
  return Half{double_to_half_bits(v)};
}
template <>
inline BFloat16 from_f64<BFloat16>(double v) {
  return BFloat16{double_to_bf16_bits(v)};
}

// One rounding from float to the storage type (float or narrower).
template <class S>
S from_f32(float v);
template <>
inline float from_f32<float>(float v) {
  return v;
}
template <>
inline Half from_f32<Half>(float v) {
  return Half{float_to_half_bits(v)};
}
template <>
inline BFloat16 from_f32<BFloat16>(float v) {
  return BFloat16{float_to_bf16_bits(v)};
}

// The smallest positive normal number of each storage type.
template <class S>
constexpr double min_normal();
template <>
constexpr double min_normal<double>() {
  return std::numeric_limits<double>::min();
}
template <>
constexpr double min_normal<float>() {
  return std::numeric_limits<float>::min();
}
template <>
constexpr double min_normal<Half>() {
  return 0x1p-14;
}
template <>
constexpr double min_normal<BFloat16>() {
  return std::numeric_limits<float>::min();
}

// Calls f(S{}) with S the storage type of `dtype` (f64, f32, f16, bf16)
// and returns its status; other dtypes are UNSUPPORTED.
template <class F>
polychip_status visit_float(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::kF64:
      return f(double{});
    case DType::kF32:
      return f(float{});
    case DType::kF16:
      return f(Half{});
    case DType::kBF16:
      return f(BFloat16{});
    default:
      return kernel_error(POLYCHIP_UNSUPPORTED, std::string(op) + ": the cpu kernels have no " +
                                                    std::string(dtype_name(dtype)) + " variant");
  }
}

// Calls f(I{}) with I = int64_t or int32_t for an index dtype.
template <class F>
polychip_status visit_index(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::kI64:
      return f(int64_t{});
    case DType::kI32:
      return f(int32_t{});
    default:
      return kernel_error(POLYCHIP_UNSUPPORTED, std::string(op) + ": index dtype " +
                                                    std::string(dtype_name(dtype)) +
                                                    " is not i64 or i32");
  }
}

}  // namespace polychip::cpu
