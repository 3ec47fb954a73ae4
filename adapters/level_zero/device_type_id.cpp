#include "device_type_id.hpp"

#include <fmt/format.h>

#include "host/device_type_id.hpp"

namespace polychip::level_zero {

std::string device_type_id(uint32_t vendor_id, const std::string& device_name, size_t max_length) {
  std::string model = opencl_family::sanitize_id_part(device_name);
  if (model.empty()) model = fmt::format("device-{:04x}", vendor_id);
  return opencl_family::join_device_type_id(vendor_id == 0x8086 ? "intel" : "level_zero", model,
                                            max_length);
}

}  // namespace polychip::level_zero
