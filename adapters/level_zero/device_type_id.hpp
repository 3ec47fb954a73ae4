// Device-type id of a Level Zero device: "<vendor>.<model>", where Intel's
// vendor id 0x8086 gives "intel" and others "level_zero", and the model is
// the device name, lower case, [a-z0-9._-] only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace polychip::level_zero {

std::string device_type_id(uint32_t vendor_id, const std::string& device_name, size_t max_length);

}  // namespace polychip::level_zero
