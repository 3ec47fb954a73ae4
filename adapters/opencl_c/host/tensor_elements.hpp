// How many elements a kernel call's tensor holds, as both OpenCL-family
// adapters count them to size launches and copies.
#pragma once

#include <cstdint>

#include "polychip/adapter_abi.h"

namespace polychip::opencl_family {

// The product of the tensor's shape (1 for rank 0).
int64_t numel(const polychip_tensor& t);

}  // namespace polychip::opencl_family
