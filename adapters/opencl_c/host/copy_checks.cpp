#include "host/copy_checks.hpp"

namespace polychip::opencl_family {

void check_copy_range(uint64_t memory_size, uint64_t offset, uint64_t size, const char* side) {
  if (offset > memory_size || size > memory_size - offset)
    fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("{} range [{}, {}) exceeds its memory of {} bytes",
                                                side, offset, offset + size, memory_size));
}

}  // namespace polychip::opencl_family
