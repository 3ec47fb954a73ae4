// The adapter logic shared by the CUDA and HIP adapters: devices, memory,
// copies, streams, events and kernel dispatch, written once against
// GpuDriver. Each adapter supplies its driver (dlopen'ed at run time), its
// embedded kernel image and, optionally, a gemm library.
//
// A missing driver, library or device is not an error: the adapter reports
// zero devices and says why (device_count's unavailable_reason).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "gemm_override.hpp"
#include "gpu_driver.hpp"
#include "polychip/adapter_abi.h"
#include "status.hpp"

namespace polychip::gpu {

struct GpuAdapterConfig {
  const char* name = "";           // adapter name, "cuda"
  const char* device_vendor = "";  // first part of device-type ids, "nvidia"
  const char* api_label = "";      // for messages, "CUDA"
  // The compiled kernel module (fatbin / code object); empty when the build
  // had the kernels turned off.
  std::span<const unsigned char> kernel_image;
  // Reason reported when kernel_image is empty, "built without CUDA kernels".
  const char* missing_kernels_reason = "";
};

// What the adapter's handles point to.
struct GpuMemory {
  int device;
  polychip_memory_kind kind;
  uint64_t address;  // device address; for pinned host memory the host address
  void* host;        // pinned host memory only
  uint64_t size;
};
struct GpuStream {
  int device;
  NativeStream native;
  uint64_t error_word;  // 8 bytes of device memory (kernel_abi.h)
  uint64_t scratch;     // grown on demand, ordered by the stream
  uint64_t scratch_bytes;
};
struct GpuEvent {
  int device;
  NativeEvent native;
};

class GpuAdapter {
 public:
  GpuAdapter(GpuAdapterConfig config, std::unique_ptr<GpuDriver> driver,
             std::unique_ptr<GemmOverride> gemm = nullptr);
  GpuAdapter(const GpuAdapter&) = delete;
  GpuAdapter& operator=(const GpuAdapter&) = delete;

  Status device_count(polychip_device_count_args* args);
  Status device_properties(polychip_device_properties_args* args);
  Status memory_allocate(polychip_memory_allocate_args* args);
  Status memory_free(polychip_memory_free_args* args);
  Status memory_host_pointer(polychip_memory_host_pointer_args* args);
  // Device memory as its driver's pointer (FI_HMEM_CUDA / FI_HMEM_ROCR: the
  // NIC reaches it through nvidia-peermem, amdgpu's peer memory or dma-buf);
  // pinned host memory as system memory.
  Status memory_export(polychip_memory_export_args* args);
  Status copy(polychip_copy_args* args);
  Status stream_create(polychip_stream_create_args* args);
  Status stream_destroy(polychip_stream_args* args);
  Status stream_synchronize(polychip_stream_args* args);
  Status event_create(polychip_event_create_args* args);
  Status event_destroy(polychip_event_args* args);
  Status event_record(polychip_event_args* args);
  Status stream_wait_event(polychip_event_args* args);
  Status event_query(polychip_event_args* args);
  Status event_synchronize(polychip_event_args* args);
  Status event_elapsed(polychip_event_elapsed_args* args);
  // Entries all point at `kernel_fn`, which must call run_kernel.
  Status kernel_table(polychip_kernel_table_args* args, polychip_kernel_fn kernel_fn);
  Status run_kernel(const polychip_kernel_args* args);

  // The signatures the kernels cover (one entry per op and dtype signature).
  static std::vector<polychip_kernel_entry> build_kernel_entries(polychip_kernel_fn fn);

 private:
  struct DeviceState {
    std::mutex mutex;
    NativeModule module = nullptr;
    std::unordered_map<std::string, NativeFunction> functions;
    int max_shared_bytes = 48 * 1024;
  };

  // Loads the driver once; afterwards count_ and reason_ are final.
  void ensure_loaded();
  Status check_device(int device, const char* call);
  Status driver_error(const char* call, int code) const;
  Status function(int device, const std::string& symbol, NativeFunction* out);
  Status ensure_scratch(GpuStream& stream, uint64_t bytes);
  Status check_range(const GpuMemory* memory, uint64_t offset, uint64_t size,
                     const char* name) const;

  GpuAdapterConfig config_;
  std::unique_ptr<GpuDriver> driver_;
  std::unique_ptr<GemmOverride> gemm_;
  std::once_flag load_once_;
  int count_ = 0;
  std::string reason_;
  std::vector<std::unique_ptr<DeviceState>> devices_;
  std::mutex entries_mutex_;
  std::vector<polychip_kernel_entry> entries_;
};

}  // namespace polychip::gpu
