// Argument checks every ABI call of an OpenCL-family adapter makes, with
// the messages both adapters give. Each throws a Failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "host/failure.hpp"

namespace polychip::opencl_family {

// An args struct: non-null, and at least its struct_size field set.
template <typename Args>
void require_args(const Args* args) {
  if (!args) fail(POLYCHIP_INVALID_ARGUMENT, "'args' is null");
  if (args->struct_size < sizeof(size_t))
    fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("'args' has struct_size {}", args->struct_size));
}

// A handle argument (memory, stream, event) named `name`: non-null.
template <typename Handle>
Handle* require_handle(Handle* handle, const char* name) {
  if (!handle) fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("'{}' is null", name));
  return handle;
}

// The device at `index`; NOT_FOUND, naming the adapter, when out of range.
template <typename Device>
Device& device_at(const std::vector<std::unique_ptr<Device>>& devices, int32_t index,
                  std::string_view adapter) {
  if (index < 0 || static_cast<size_t>(index) >= devices.size())
    fail(POLYCHIP_NOT_FOUND,
         fmt::format("device index {} is out of range: the {} adapter has {} device(s)", index,
                     adapter, devices.size()));
  return *devices[static_cast<size_t>(index)];
}

}  // namespace polychip::opencl_family
