#include "host/device_queries.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "host/failure.hpp"

namespace polychip::opencl_family {

void answer_device_count(size_t count, const std::string& unavailable_reason,
                         polychip_device_count_args* args) {
  args->count = static_cast<int32_t>(count);
  args->unavailable_reason = count == 0 ? unavailable_reason.c_str() : nullptr;
}

void copy_device_properties(const polychip_device_properties& properties,
                            polychip_device_properties* out) {
  if (!out) fail(POLYCHIP_INVALID_ARGUMENT, "'properties' is null");
  size_t caller = out->struct_size;
  if (caller < sizeof(size_t))
    fail(POLYCHIP_INVALID_ARGUMENT, "'properties->struct_size' is not set");
  size_t n = std::min(caller, properties.struct_size);
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t),
              reinterpret_cast<const char*>(&properties) + sizeof(size_t), n - sizeof(size_t));
}

}  // namespace polychip::opencl_family
