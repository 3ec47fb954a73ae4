// The two device queries of the ABI that need nothing of the runtime, only
// what enumeration found: how many devices (and why none), and a device's
// properties.
#pragma once

#include <cstddef>
#include <string>

#include "polychip/adapter_abi.h"

namespace polychip::opencl_family {

// The count, and `unavailable_reason` (which must outlive the process's use
// of the adapter) when it is zero.
void answer_device_count(size_t count, const std::string& unavailable_reason,
                         polychip_device_count_args* args);

// Copies `properties` into the caller's struct up to the smaller of the two
// struct sizes, keeping the caller's struct_size (an older caller gets the
// fields it knows). INVALID_ARGUMENT when `out` is null or has no size.
void copy_device_properties(const polychip_device_properties& properties,
                            polychip_device_properties* out);

}  // namespace polychip::opencl_family
