// Host-side mirror of pc_layout in common.cl: the shape, strides and
// element offsets of up to three same-shaped tensors, passed by value to
// the elementwise and reduction kernels by the opencl and level_zero
// adapters. All fields are 64-bit so both sides agree without padding.
#pragma once

#include <cstdint>

#include "polychip/adapter_abi.h"

namespace polychip::opencl_c {

struct Layout {
  int64_t rank = 0;
  int64_t numel = 1;
  int64_t shape[POLYCHIP_MAX_RANK] = {};
  int64_t stride[3][POLYCHIP_MAX_RANK] = {};
  int64_t offset[3] = {};
};
static_assert(sizeof(Layout) == 8 * (2 + POLYCHIP_MAX_RANK * 4 + 3), "no padding");

}  // namespace polychip::opencl_c
