// The OpenCL adapter's internal state: devices (one context each), memory,
// streams (in-order command queues) and events (markers), plus the error
// idiom shared by the ABI functions and the kernel launchers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cl_api.hpp"
#include "host/error_channel.hpp"
#include "host/failure.hpp"
#include "polychip/adapter_abi.h"

extern "C" const polychip_adapter_api* polychip_opencl_adapter_get_api(void);

namespace polychip::opencl {

using opencl_family::fail;
// Throws when err != CL_SUCCESS, naming the call and the CL error.
void check_cl(cl_int err, const char* call);

struct Device {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  cl_context context = nullptr;
  cl_command_queue sync_queue = nullptr;  // synchronous copies
  polychip_device_properties properties{};
  bool has_fp64 = false;
  bool correctly_rounded_divide_sqrt = false;
  uint64_t max_alloc_bytes = 0;
  // Guards the program and kernel caches and kernel argument setting.
  std::mutex mutex;
  std::map<std::pair<std::string, int>, cl_program> programs;  // (file, dtype)
  std::map<std::string, cl_kernel> kernels;                    // "file/dtype/name"
};

struct Memory {
  int32_t device;
  polychip_memory_kind kind;
  uint64_t size;
  cl_mem mem;    // nullptr for size 0
  void* mapped;  // pinned host memory: mapped once, for host-side copies
};

struct Stream {
  int32_t device;
  cl_command_queue queue;
};

struct Event {
  int32_t device;
  cl_event event;  // the last recorded marker; nullptr before any record
};

inline Memory* as_memory(polychip_memory* m) { return reinterpret_cast<Memory*>(m); }
inline Stream* as_stream(polychip_stream* s) { return reinterpret_cast<Stream*>(s); }
inline Event* as_event(polychip_event* e) { return reinterpret_cast<Event*>(e); }

// Enumerated once; devices are never removed.
struct Platforms {
  const ClApi* cl = nullptr;
  std::vector<std::unique_ptr<Device>> devices;
  std::string unavailable_reason;  // when devices is empty
};
Platforms& platforms();
// Throws NOT_FOUND for an index out of range.
Device& device_at(int32_t index);
const ClApi& cl();

// The calling thread's error channel ("opencl <call>: <message>"), used by
// the ABI functions and the kernel entry point.
opencl_family::ErrorChannel& errors();

// The adapter's kernel table for one device (kernels/kernel_table.cpp).
const std::vector<polychip_kernel_entry>& kernel_entries(Device& device);

}  // namespace polychip::opencl
