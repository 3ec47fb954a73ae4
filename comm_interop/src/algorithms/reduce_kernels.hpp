// Element-wise reduction kernels on the host. f16/bf16 accumulate in f32
// and are rounded once, when a result is final.
#pragma once

#include <cstddef>

#include "polychip/comm/types.hpp"

namespace polychip::comm {

// dst[i] = a[i] op b[i]; dst may alias a or b. kAvg reduces as kSum;
// min/max let a NaN win, whichever operand holds it.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);
ReduceFn reduce_function(DType accumulation_type, ReduceOp op);

// The type partial results travel in: f32 for f16/bf16, else the dtype.
DType accumulation_type(DType dtype);
// f16/bf16 -> f32 (exact).
void widen_to_f32(const void* src, DType src_type, float* dst, size_t count);
// Turns accumulated values into final results of `out_type`: kAvg divides
// by `ranks` (floats in double, one rounding; integers truncate), and
// f32 accumulators are rounded to f16/bf16 (nearest-even). `out` may alias
// `acc` when both have the same type.
void finalize_reduction(const void* acc, DType acc_type, void* out, DType out_type, size_t count,
                        ReduceOp op, int ranks);

uint16_t float_to_half_bits(float v);
float half_bits_to_float(uint16_t h);
uint16_t float_to_bfloat16_bits(float v);
float bfloat16_bits_to_float(uint16_t h);

}  // namespace polychip::comm
