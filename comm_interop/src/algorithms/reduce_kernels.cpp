#include "algorithms/reduce_kernels.hpp"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "polychip/error.hpp"

namespace polychip::comm {
namespace {

template <typename T>
struct Sum {
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {  // wraps, like two's complement hardware
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
};
template <typename T>
struct Prod {
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return a * b;
    }
  }
};
// Min and max let a NaN win, as reduce_max does (docs/reference-numerics.md),
// whichever operand holds it: a comparison alone keeps `a` when `b` is NaN,
// so the result would depend on the order the ranks' values meet in.
template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}
template <typename T>
struct Min {
  static T apply(T a, T b) { return b < a || is_nan(b) ? b : a; }
};
template <typename T>
struct Max {
  static T apply(T a, T b) { return a < b || is_nan(b) ? b : a; }
};

template <typename T, typename Op>
void reduce_kernel(void* dst, const void* a, const void* b, size_t count) {
  // Loads and stores through locals so aliasing dst/a/b stays correct while
  // the loop still vectorises.
  auto* d = static_cast<T*>(dst);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < count; ++i) d[i] = Op::apply(x[i], y[i]);
}

template <typename T>
ReduceFn for_type(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return &reduce_kernel<T, Sum<T>>;
    case ReduceOp::kProd:
      return &reduce_kernel<T, Prod<T>>;
    case ReduceOp::kMin:
      return &reduce_kernel<T, Min<T>>;
    case ReduceOp::kMax:
      return &reduce_kernel<T, Max<T>>;
  }
  return nullptr;
}

uint32_t float_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
float bits_float(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

}  // namespace

ReduceFn reduce_function(DType t, ReduceOp op) {
  switch (t) {
    case DType::kF32:
      return for_type<float>(op);
    case DType::kF64:
      return for_type<double>(op);
    case DType::kI32:
      return for_type<int32_t>(op);
    case DType::kI64:
      return for_type<int64_t>(op);
    default:
      throw_error(StatusCode::kInvalidArgument,
                  "no reduction kernel accumulates in " + std::string(dtype_name(t)));
  }
}

DType accumulation_type(DType dtype) {
  return (dtype == DType::kF16 || dtype == DType::kBF16) ? DType::kF32 : dtype;
}

float half_bits_to_float(uint16_t h) {
  uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0) {
    if (mantissa == 0) return bits_float(sign);
    // Subnormal: value = mantissa * 2^-24, exact in f32.
    float v = static_cast<float>(mantissa) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t float_to_half_bits(float v) {
  uint32_t b = float_bits(v);
  uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  uint32_t abs = b & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN (keep NaN quiet and non-zero)
    return sign | (abs > 0x7f800000u ? static_cast<uint16_t>(0x7e00 | ((abs >> 13) & 0x3ff))
                                     : uint16_t{0x7c00});
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: overflow to Inf
  if (abs < 0x38800000u) {                       // below 2^-14: subnormal or zero
    // Scale so the f16 subnormal unit (2^-24) becomes 1 and round to nearest-even;
    // the multiplication is exact and rintf rounds ties to even.
    float scaled = bits_float(abs) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t mantissa = abs & 0x7fffff;
  uint32_t exponent = (abs >> 23) - 112;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // carries into the exponent
  return sign | static_cast<uint16_t>(half);
}

float bfloat16_bits_to_float(uint16_t h) { return bits_float(uint32_t{h} << 16); }

uint16_t float_to_bfloat16_bits(float v) {
  uint32_t b = float_bits(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x40);  // NaN
  uint32_t rounding = 0x7fff + ((b >> 16) & 1);
  return static_cast<uint16_t>((b + rounding) >> 16);
}

void widen_to_f32(const void* src, DType src_type, float* dst, size_t count) {
  const auto* s = static_cast<const uint16_t*>(src);
  if (src_type == DType::kF16) {
    for (size_t i = 0; i < count; ++i) dst[i] = half_bits_to_float(s[i]);
  } else if (src_type == DType::kBF16) {
    for (size_t i = 0; i < count; ++i) dst[i] = bfloat16_bits_to_float(s[i]);
  } else {
    throw_error(StatusCode::kInvalidArgument, "widen_to_f32: source must be f16 or bf16");
  }
}

void finalize_reduction(const void* acc, DType acc_type, void* out, DType out_type, size_t count,
                        ReduceOp op, int ranks) {
  const bool avg = op == ReduceOp::kAvg;
  if (acc_type == DType::kF32 && out_type != DType::kF32) {
    const auto* a = static_cast<const float*>(acc);
    auto* o = static_cast<uint16_t*>(out);
    const bool half = out_type == DType::kF16;
    for (size_t i = 0; i < count; ++i) {
      float v = avg ? static_cast<float>(static_cast<double>(a[i]) / ranks) : a[i];
      o[i] = half ? float_to_half_bits(v) : float_to_bfloat16_bits(v);
    }
    return;
  }
  if (acc_type != out_type) {
    throw_error(StatusCode::kInternal, "finalize_reduction: mismatched types");
  }
  size_t bytes = count * dtype_size(out_type);
  if (!avg) {
    // Zero elements may come with null buffers, which memmove must not get.
    if (out != acc && bytes > 0) std::memmove(out, acc, bytes);
    return;
  }
  switch (out_type) {
    case DType::kF32: {
      const auto* a = static_cast<const float*>(acc);
      auto* o = static_cast<float*>(out);
      for (size_t i = 0; i < count; ++i) o[i] = static_cast<float>(double{a[i]} / ranks);
      break;
    }
    case DType::kF64: {
      const auto* a = static_cast<const double*>(acc);
      auto* o = static_cast<double*>(out);
      for (size_t i = 0; i < count; ++i) o[i] = a[i] / ranks;
      break;
    }
    case DType::kI32: {
      const auto* a = static_cast<const int32_t*>(acc);
      auto* o = static_cast<int32_t*>(out);
      for (size_t i = 0; i < count; ++i) o[i] = a[i] / ranks;
      break;
    }
    case DType::kI64: {
      const auto* a = static_cast<const int64_t*>(acc);
      auto* o = static_cast<int64_t*>(out);
      for (size_t i = 0; i < count; ++i) o[i] = a[i] / ranks;
      break;
    }
    default:
      throw_error(StatusCode::kInvalidArgument, "finalize_reduction: unsupported dtype");
  }
}

}  // namespace polychip::comm
