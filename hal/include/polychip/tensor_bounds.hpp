// Whether a tensor view stays inside its memory: the dispatcher checks it
// before any adapter runs, and every adapter that launches kernels checks it
// again on the memory it allocated (direct ABI callers skip the dispatcher),
// so a bad view is an error, never an out-of-bounds access.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "polychip/adapter_abi.h"

namespace polychip {

// "" when every element of `t` lies in [0, memory_size) bytes of its
// memory, otherwise why not, naming tensor number `index`:
// "tensor 2 reaches byte 4100 but its memory holds 4096 bytes". An empty
// tensor touches nothing and always fits.
std::string check_tensor_bounds(const polychip_tensor& t, uint64_t memory_size, int index);

// The same for every tensor of a kernel call; `memory_size` gives the size
// of an allocation (a tensor without memory has 0 bytes).
using MemorySizeFn = uint64_t (*)(polychip_memory* memory);
std::string check_tensors_bounds(std::span<const polychip_tensor> tensors,
                                 MemorySizeFn memory_size);

}  // namespace polychip
