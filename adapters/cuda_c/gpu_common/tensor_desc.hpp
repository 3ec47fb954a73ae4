// Turns polychip tensors into the kernels' pc_tensor_desc (kernel_abi.h).
#pragma once

#include <cstdint>

#include "../kernels/kernel_abi.h"
#include "polychip/adapter_abi.h"

namespace polychip::gpu {

// Number of elements of a tensor (1 for rank 0).
int64_t element_count(const polychip_tensor& t);

// Whether the view is dense row-major (strides of size-1 dimensions ignored).
bool is_row_major(const polychip_tensor& t);

// `address` is the device address of the tensor's element [0,...,0].
pc_tensor_desc make_tensor_desc(const polychip_tensor& t, uint64_t address);

// A rank-0 tensor described as rank 1 of length 1, so kernels always see at
// least one dimension.
inline constexpr int kMinDescRank = 1;

}  // namespace polychip::gpu
