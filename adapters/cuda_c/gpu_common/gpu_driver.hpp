// What the shared GPU adapter needs from a vendor driver API. CUDA (driver
// API, adapters/cuda) and HIP (module API, adapters/hip) each implement it
// over functions they dlopen at run time; every call returns the driver's
// own error code (0 = success) so messages can name it.
#pragma once

#include <cstdint>
#include <string>

#include "driver_error.hpp"
#include "launch_geometry.hpp"

namespace polychip::gpu {

// Opaque driver handles.
using NativeStream = void*;
using NativeEvent = void*;
using NativeModule = void*;
using NativeFunction = void*;

class GpuDriver {
 public:
  virtual ~GpuDriver() = default;

  virtual Api api() const = 0;

  // Loads the driver library and initializes it. Returns "" on success,
  // otherwise why no device can be used ("libcuda.so.1 not found: ...",
  // "no CUDA driver: cuInit returned CUDA_ERROR_NO_DEVICE (100)").
  virtual std::string load() = 0;

  virtual int device_count(int* count) = 0;
  virtual int device_name(int device, std::string* name) = 0;
  virtual int device_memory_bytes(int device, uint64_t* bytes) = 0;
  virtual int device_compute_units(int device, int* units) = 0;
  virtual int device_max_shared_bytes(int device, int* bytes) = 0;

  // Makes `device` current on the calling thread (CUDA: its primary
  // context; HIP: hipSetDevice). Every other call below assumes it.
  virtual int make_current(int device) = 0;

  virtual int allocate_device(uint64_t bytes, uint64_t* address) = 0;
  virtual int free_device(uint64_t address) = 0;
  virtual int allocate_pinned_host(uint64_t bytes, void** host) = 0;
  virtual int free_pinned_host(void* host) = 0;

  // Copies between any two addresses (unified addressing: device, pinned or
  // pageable host). stream == nullptr: synchronous.
  virtual int copy(uint64_t dst, uint64_t src, uint64_t bytes, NativeStream stream) = 0;
  virtual int fill_bytes(uint64_t dst, unsigned char value, uint64_t bytes,
                         NativeStream stream) = 0;

  virtual int stream_create(NativeStream* stream) = 0;
  virtual int stream_destroy(NativeStream stream) = 0;
  virtual int stream_synchronize(NativeStream stream) = 0;
  virtual int stream_wait_event(NativeStream stream, NativeEvent event) = 0;

  virtual int event_create(NativeEvent* event) = 0;
  virtual int event_destroy(NativeEvent event) = 0;
  virtual int event_record(NativeEvent event, NativeStream stream) = 0;
  // Returns 0 and sets *complete; kDriverNotReady is not an error here.
  virtual int event_query(NativeEvent event, bool* complete) = 0;
  virtual int event_synchronize(NativeEvent event) = 0;
  virtual int event_elapsed_ms(NativeEvent start, NativeEvent end, float* ms) = 0;

  virtual int module_load(const void* image, NativeModule* module) = 0;
  virtual int module_function(NativeModule module, const char* name, NativeFunction* function) = 0;
  virtual int launch(NativeFunction function, const LaunchGeometry& geometry, NativeStream stream,
                     void** params) = 0;
};

}  // namespace polychip::gpu
