// Why device enumeration found no device, said the same way by both
// OpenCL-family adapters.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace polychip::opencl_family {

// With no `problems` (nothing was found to open), `none_found`; otherwise
// "no usable <backend> device: <problem>; <problem>...".
std::string no_device_reason(std::string_view backend, std::string_view none_found,
                             const std::vector<std::string>& problems);

}  // namespace polychip::opencl_family
