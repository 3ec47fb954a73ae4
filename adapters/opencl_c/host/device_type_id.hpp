// The parts of device-type ids both OpenCL-family adapters build the same
// way: "<vendor>.<model>", lower case, characters [a-z0-9._-] only, at most
// a given length. What goes in vendor and model is each adapter's choice.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace polychip::opencl_family {

// Lower case; each run of characters other than [A-Za-z0-9._] becomes one
// '-', none at either end.
std::string sanitize_id_part(std::string_view text);

// "<vendor>.<model>" cut to max_length characters, without a trailing '-'.
std::string join_device_type_id(std::string_view vendor, std::string_view model, size_t max_length);

}  // namespace polychip::opencl_family
