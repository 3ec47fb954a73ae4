#include "host/memory_checks.hpp"

#include <fmt/format.h>

#include "host/failure.hpp"

namespace polychip::opencl_family {

void check_allocation(polychip_memory_kind kind, uint64_t size_bytes, uint64_t max_alloc_bytes) {
  if (kind != POLYCHIP_MEMORY_DEVICE && kind != POLYCHIP_MEMORY_PINNED_HOST)
    fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("unknown memory kind {}", kind));
  if (size_bytes > max_alloc_bytes)
    fail(POLYCHIP_OUT_OF_MEMORY,
         fmt::format("{} bytes exceed the device's largest allocation ({} bytes)", size_bytes,
                     max_alloc_bytes));
}

void require_host_visible(polychip_memory_kind kind, std::string_view adapter) {
  if (kind != POLYCHIP_MEMORY_PINNED_HOST)
    fail(POLYCHIP_UNSUPPORTED,
         fmt::format("{} device memory is not host visible; copy it with copy()", adapter));
}

}  // namespace polychip::opencl_family
