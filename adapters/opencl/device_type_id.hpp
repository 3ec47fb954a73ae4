// Device-type ids of OpenCL devices: "opencl.<platform>-<device>", lower
// case, characters [a-z0-9._-] only, e.g. "opencl.pocl-cpu". CPU devices use
// "cpu" rather than their name, which only names the host processor.
#pragma once

#include <string>
#include <string_view>

namespace polychip::opencl {

// A short platform name: known vendors map to their usual short name
// ("Portable Computing Language" -> "pocl"); others are sanitized.
std::string platform_short_name(std::string_view platform_name);

// The full id, at most max_length characters.
std::string device_type_id(std::string_view platform_name, std::string_view device_name,
                           bool is_cpu, size_t max_length);

}  // namespace polychip::opencl
