// The level_zero adapter's internal state: devices (a context per driver),
// memory from zeMemAllocDevice/zeMemAllocHost, streams (a command queue;
// every submission is a closed regular command list, kept until the stream
// synchronizes), events (one per event pool, signalled by a barrier).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "host/error_channel.hpp"
#include "host/failure.hpp"
#include "polychip/adapter_abi.h"
#include "ze_api.hpp"

extern "C" const polychip_adapter_api* polychip_level_zero_adapter_get_api(void);

namespace polychip::level_zero {

using opencl_family::fail;
using opencl_family::Failure;
void check_ze(ze_result_t result, const char* call);
// The calling thread's error channel ("level_zero <call>: <message>"), used
// by the ABI functions and the kernel entry point.
opencl_family::ErrorChannel& errors();

struct Device {
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t handle = nullptr;
  ze_context_handle_t context = nullptr;
  uint32_t compute_queue_ordinal = 0;
  bool has_fp64 = false;  // ZE_DEVICE_MODULE_FLAG_FP64: f64 kernels and cast
  double timer_ns_per_tick = 1.0;
  uint64_t timestamp_mask = ~uint64_t{0};
  uint64_t max_alloc_bytes = 0;
  uint64_t max_group_count = UINT32_MAX;
  uint32_t max_group_size = 256;
  polychip_device_properties properties{};
  std::mutex mutex;  // module/kernel caches and argument setting
  std::map<std::pair<std::string, int>, ze_module_handle_t> modules;
  std::map<std::string, ze_kernel_handle_t> kernels;
};

struct Memory {
  int32_t device;
  polychip_memory_kind kind;
  uint64_t size;
  void* ptr;  // nullptr for size 0
};

class Stream {
 public:
  Stream(int32_t device, ze_command_queue_handle_t queue) : device_(device), queue_(queue) {}
  ~Stream();
  int32_t device() const { return device_; }
  // Records commands into a fresh command list and executes it on the queue.
  template <typename Append>
  void submit(Device& dev, Append&& append);
  void synchronize();

 private:
  void submit_list(Device& dev, ze_command_list_handle_t list);
  int32_t device_;
  ze_command_queue_handle_t queue_;
  std::mutex mutex_;
  std::vector<ze_command_list_handle_t> pending_;
};

struct Event {
  int32_t device;
  ze_event_pool_handle_t pool;
  ze_event_handle_t event;
  bool recorded;
};

inline Memory* as_memory(polychip_memory* m) { return reinterpret_cast<Memory*>(m); }
inline Stream* as_stream(polychip_stream* s) { return reinterpret_cast<Stream*>(s); }
inline Event* as_event(polychip_event* e) { return reinterpret_cast<Event*>(e); }

struct Platform {
  const ZeApi* ze = nullptr;
  std::vector<std::unique_ptr<Device>> devices;
  std::string unavailable_reason;
};
Platform& platform();
Device& device_at(int32_t index);
const ZeApi& ze();

ze_command_list_handle_t create_command_list(Device& dev);

template <typename Append>
void Stream::submit(Device& dev, Append&& append) {
  ze_command_list_handle_t list = create_command_list(dev);
  try {
    append(list);
  } catch (...) {
    ze().zeCommandListDestroy(list);
    throw;
  }
  submit_list(dev, list);
}

const std::vector<polychip_kernel_entry>& kernel_entries(Device& device);

}  // namespace polychip::level_zero
