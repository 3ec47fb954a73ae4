// polychip's dtypes and their conversions. Every conversion into a narrower
// format goes through double with one round-to-nearest-even, so results are
// exact to the bit and independent of the host's FPU settings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "polychip/adapter_abi.h"

namespace polychip {

enum class DType : int32_t {
  kF64 = POLYCHIP_DTYPE_F64,
  kF32 = POLYCHIP_DTYPE_F32,
  kF16 = POLYCHIP_DTYPE_F16,
  kBF16 = POLYCHIP_DTYPE_BF16,
  kF8E4M3 = POLYCHIP_DTYPE_F8E4M3,  // OCP E4M3FN: no Inf, NaN = S.1111.111, max 448
  kF8E5M2 = POLYCHIP_DTYPE_F8E5M2,  // IEEE-like: Inf and NaN, max 57344
  kI8 = POLYCHIP_DTYPE_I8,
  kI32 = POLYCHIP_DTYPE_I32,
  kI64 = POLYCHIP_DTYPE_I64,
  kU8 = POLYCHIP_DTYPE_U8,
  kBool = POLYCHIP_DTYPE_BOOL,
};

inline constexpr DType kAllDTypes[] = {DType::kF64,    DType::kF32,    DType::kF16, DType::kBF16,
                                       DType::kF8E4M3, DType::kF8E5M2, DType::kI8,  DType::kI32,
                                       DType::kI64,    DType::kU8,     DType::kBool};

bool is_valid_dtype(int32_t code);
size_t dtype_size(DType dtype);
bool is_floating(DType dtype);
// "f32", "bf16", "f8e4m3", "i64", "bool", ...
std::string_view dtype_name(DType dtype);
// Throws Error(INVALID_ARGUMENT) naming the unknown dtype and the known ones.
DType parse_dtype(std::string_view name);

// Bit-exact conversions (round to nearest, ties to even).
uint16_t f64_to_f16_bits(double value);
uint16_t f64_to_bf16_bits(double value);
uint8_t f64_to_f8e4m3_bits(double value);
uint8_t f64_to_f8e5m2_bits(double value);
double f16_bits_to_f64(uint16_t bits);
double bf16_bits_to_f64(uint16_t bits);
double f8e4m3_bits_to_f64(uint8_t bits);
double f8e5m2_bits_to_f64(uint8_t bits);
inline uint16_t f32_to_f16_bits(float v) { return f64_to_f16_bits(v); }
inline uint16_t f32_to_bf16_bits(float v) { return f64_to_bf16_bits(v); }
inline float f16_bits_to_f32(uint16_t b) { return static_cast<float>(f16_bits_to_f64(b)); }
inline float bf16_bits_to_f32(uint16_t b) { return static_cast<float>(bf16_bits_to_f64(b)); }

// One element at `src` of dtype `dtype`, as a double (integers exactly where
// representable, bool as 0/1).
double load_as_f64(const void* src, DType dtype);
// Stores `value` rounded to `dtype` (RNE for floats; integers saturate,
// NaN -> 0; bool: value != 0).
void store_from_f64(double value, void* dst, DType dtype);
// Rounds a double to the nearest value representable in `dtype`.
double round_to_dtype(double value, DType dtype);

}  // namespace polychip
