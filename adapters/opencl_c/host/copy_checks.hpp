// The checks of the copy ABI call that need nothing of the backend: which
// ends are the adapter's memory and which are host pointers, each memory
// range within its memory, and one device for the memory and the stream.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "host/abi_checks.hpp"
#include "host/failure.hpp"
#include "polychip/adapter_abi.h"

namespace polychip::opencl_family {

// [offset, offset + size) lies within a memory of memory_size bytes;
// INVALID_ARGUMENT naming `side` ("source", "destination") otherwise.
void check_copy_range(uint64_t memory_size, uint64_t offset, uint64_t size, const char* side);

// The two ends of a copy: a memory end is the adapter's Memory (the other
// pointer of that side is null), a host end a host pointer.
template <typename Memory>
struct CopyEnds {
  Memory* src_memory = nullptr;
  Memory* dst_memory = nullptr;
  const void* src_host = nullptr;
  void* dst_host = nullptr;
};

// The ends of `args` by its kind (INVALID_ARGUMENT for an unknown kind, a
// null memory handle, or a null host pointer with a non-zero size), with
// each memory range checked against the Memory's `size`. `as_memory` turns
// a handle into the adapter's Memory.
template <typename Memory, typename AsMemory>
CopyEnds<Memory> copy_ends(const polychip_copy_args& args, AsMemory as_memory) {
  auto memory = [&](polychip_memory* m, const char* name) {
    return as_memory(require_handle(m, name));
  };
  const uint64_t size = args.size_bytes;
  CopyEnds<Memory> ends;
  switch (args.kind) {
    case POLYCHIP_COPY_HOST_TO_DEVICE:
      ends.dst_memory = memory(args.dst_memory, "dst_memory");
      ends.src_host = args.src_host;
      if (!ends.src_host && size) fail(POLYCHIP_INVALID_ARGUMENT, "'src_host' is null");
      break;
    case POLYCHIP_COPY_DEVICE_TO_HOST:
      ends.src_memory = memory(args.src_memory, "src_memory");
      ends.dst_host = args.dst_host;
      if (!ends.dst_host && size) fail(POLYCHIP_INVALID_ARGUMENT, "'dst_host' is null");
      break;
    case POLYCHIP_COPY_DEVICE_TO_DEVICE:
      ends.src_memory = memory(args.src_memory, "src_memory");
      ends.dst_memory = memory(args.dst_memory, "dst_memory");
      break;
    default:
      fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("unknown copy kind {}", args.kind));
  }
  if (ends.src_memory) check_copy_range(ends.src_memory->size, args.src_offset, size, "source");
  if (ends.dst_memory)
    check_copy_range(ends.dst_memory->size, args.dst_offset, size, "destination");
  return ends;
}

// The device a copy runs on: the stream's when it has one, else that of
// its memory; INVALID_ARGUMENT, naming the adapter, unless every memory end
// is on that device.
template <typename Memory>
int32_t copy_device(const CopyEnds<Memory>& ends, std::optional<int32_t> stream_device,
                    std::string_view adapter) {
  const int32_t device =
      stream_device ? *stream_device
                    : (ends.dst_memory ? ends.dst_memory->device : ends.src_memory->device);
  if ((ends.src_memory && ends.src_memory->device != device) ||
      (ends.dst_memory && ends.dst_memory->device != device))
    fail(POLYCHIP_INVALID_ARGUMENT,
         fmt::format("source, destination and stream must belong to the same {} device", adapter));
  return device;
}

}  // namespace polychip::opencl_family
