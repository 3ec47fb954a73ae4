// Device-type ids of GPUs: "vendor.model" from the name the driver reports,
// e.g. "NVIDIA A100-SXM4-80GB" -> "nvidia.a100-sxm4-80gb",
// "AMD Instinct MI250X" -> "amd.instinct-mi250x".
#pragma once

#include <string>
#include <string_view>

namespace polychip::gpu {

// Lower-cases, turns every run of characters other than [a-z0-9] into one
// '-', trims '-' at both ends, drops a leading "<vendor>" word the driver
// repeats, and prefixes "<vendor>.". An empty model becomes "unknown". The
// result fits POLYCHIP_DEVICE_TYPE_MAX (63 characters and the NUL).
std::string device_type_id(std::string_view vendor, std::string_view device_name);

}  // namespace polychip::gpu
