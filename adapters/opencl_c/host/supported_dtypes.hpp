// The dtypes an OpenCL-family device lists in its properties: both
// adapters run the same kernel sources, so only fp64 makes a difference.
#pragma once

#include <cstdint>

namespace polychip::opencl_family {

// The supported_dtypes mask (bit 1 << dtype): f32, f16, bf16, i32 and i64;
// with fp64 also f64 and the f8 formats (cast goes through double).
uint64_t supported_dtypes(bool has_fp64);

}  // namespace polychip::opencl_family
