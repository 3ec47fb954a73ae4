// Bit-exact roundings the NVIDIA emulation needs, written independently of
// the HAL's conversions so the emulation is checked on its own:
//  - f32 -> TF32 as cuBLAS's TF32 gemm converts operands (round to nearest
//    even, measured on an H200; cvt.rna's ties away from zero and
//    truncation, for comparison),
//  - f32 -> bf16 and f32 -> f16 with round to nearest even (as
//    __float2bfloat16_rn / __float2half_rn),
//  - any double -> any floating dtype with round to nearest even.
#pragma once

#include <cstdint>

#include "polychip/dtype.hpp"

namespace polychip::reference {

uint32_t float_bits(float x);
float float_from_bits(uint32_t bits);

enum class Tf32Rounding {
  kNearestEven,      // cuBLAS's TF32 gemm on an H200 (measured: docs/reference-numerics.md)
  kNearestTiesAway,  // cvt.rna.tf32.f32 (nvcuda::wmma::__float_to_tf32)
  kTruncate,         // the low 13 bits dropped (raw f32 bits fed to a TF32 MMA)
};
// TF32 keeps f32's sign and 8-bit exponent and the top 10 mantissa bits;
// the result is an f32 whose low 13 bits are zero. NaN stays NaN, +-Inf
// stays +-Inf; rounding the largest finite values up gives Inf.
float round_to_tf32(float x, Tf32Rounding mode = Tf32Rounding::kNearestEven);

uint16_t float_to_bf16_bits(float x);  // RNE; NaN -> quiet NaN with x's sign
float bf16_bits_to_float(uint16_t bits);
uint16_t float_to_f16_bits(float x);  // RNE; overflow -> Inf; subnormals kept
float f16_bits_to_float(uint16_t bits);

// `x` rounded once (RNE) to a floating `dtype`: f64 unchanged; f32, f16,
// bf16, f8e5m2 overflow to Inf; f8e4m3 (no Inf) overflows to NaN.
double round_to(DType dtype, double x);
// A float rounded to a 16-bit or 32-bit dtype (f64: widened exactly).
double round_float_to(DType dtype, float x);

}  // namespace polychip::reference
