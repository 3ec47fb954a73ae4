// The checks of the memory ABI calls that need nothing of the backend:
// what memory_allocate accepts, and which memory the host may touch.
#pragma once

#include <cstdint>
#include <string_view>

#include "polychip/adapter_abi.h"

namespace polychip::opencl_family {

// A known memory kind (INVALID_ARGUMENT), and size_bytes within the
// device's largest allocation, max_alloc_bytes (OUT_OF_MEMORY).
void check_allocation(polychip_memory_kind kind, uint64_t size_bytes, uint64_t max_alloc_bytes);

// Only pinned host memory has a host pointer: UNSUPPORTED, naming the
// adapter, for device memory.
void require_host_visible(polychip_memory_kind kind, std::string_view adapter);

}  // namespace polychip::opencl_family
