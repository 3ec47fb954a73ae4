#include "cuda_driver.hpp"

#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "gpu_common/dynamic_library.hpp"

namespace polychip::cuda {

namespace {

// The driver API types we use, declared here so the adapter builds without
// the CUDA headers (values checked against cuda.h in tests when present).
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUdeviceptr = unsigned long long;
using CUstream = void*;
using CUevent = void*;
using CUmodule = void*;
using CUfunction = void*;
constexpr int kAttrMaxSharedMemoryPerBlock = 8;  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK
constexpr int kAttrMultiprocessorCount = 16;     // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr unsigned kStreamNonBlocking = 1;       // CU_STREAM_NON_BLOCKING
constexpr unsigned kEventDefault = 0;            // CU_EVENT_DEFAULT

struct CudaApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceTotalMem_v2)(size_t*, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuMemAllocHost_v2)(void**, size_t);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy_v2)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventDestroy_v2)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
};

class CudaDriver final : public gpu::GpuDriver {
 public:
  explicit CudaDriver(std::initializer_list<const char*> names) : names_(names) {}

  gpu::Api api() const override { return gpu::Api::kCuda; }

  std::string load() override {
    if (std::string e = library_.open(names_); !e.empty()) return e;
    bind_all();
    if (!library_.first_missing().empty())
      return fmt::format("{} lacks {} (driver too old?)", library_.loaded_name(),
                         library_.first_missing());
    if (int rc = api_.cuInit(0); rc != 0)
      return "no CUDA driver: " + gpu::describe_driver_call(gpu::Api::kCuda, "cuInit", rc);
    int n = 0;
    if (api_.cuDeviceGetCount(&n) == 0 && n > 0) contexts_.assign(n, nullptr);
    return "";
  }

  int device_count(int* count) override { return api_.cuDeviceGetCount(count); }
  int device_name(int device, std::string* name) override {
    char buffer[256] = {};
    CUdevice d = 0;
    if (int rc = api_.cuDeviceGet(&d, device)) return rc;
    if (int rc = api_.cuDeviceGetName(buffer, sizeof buffer - 1, d)) return rc;
    *name = buffer;
    return 0;
  }
  int device_memory_bytes(int device, uint64_t* bytes) override {
    size_t b = 0;
    int rc = api_.cuDeviceTotalMem_v2(&b, device);
    *bytes = b;
    return rc;
  }
  int device_compute_units(int device, int* units) override {
    return api_.cuDeviceGetAttribute(units, kAttrMultiprocessorCount, device);
  }
  int device_max_shared_bytes(int device, int* bytes) override {
    return api_.cuDeviceGetAttribute(bytes, kAttrMaxSharedMemoryPerBlock, device);
  }

  int make_current(int device) override {
    CUcontext ctx = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (device < 0 || device >= static_cast<int>(contexts_.size())) return 101;
      if (!contexts_[device]) {
        CUdevice d = 0;
        if (int rc = api_.cuDeviceGet(&d, device)) return rc;
        if (int rc = api_.cuDevicePrimaryCtxRetain(&contexts_[device], d)) return rc;
      }
      ctx = contexts_[device];
    }
    return api_.cuCtxSetCurrent(ctx);
  }

  int allocate_device(uint64_t bytes, uint64_t* address) override {
    CUdeviceptr p = 0;
    int rc = api_.cuMemAlloc_v2(&p, bytes);
    *address = p;
    return rc;
  }
  int free_device(uint64_t address) override { return api_.cuMemFree_v2(address); }
  int allocate_pinned_host(uint64_t bytes, void** host) override {
    return api_.cuMemAllocHost_v2(host, bytes);
  }
  int free_pinned_host(void* host) override { return api_.cuMemFreeHost(host); }

  int copy(uint64_t dst, uint64_t src, uint64_t bytes, gpu::NativeStream stream) override {
    return stream ? api_.cuMemcpyAsync(dst, src, bytes, stream) : api_.cuMemcpy(dst, src, bytes);
  }
  int fill_bytes(uint64_t dst, unsigned char value, uint64_t bytes,
                 gpu::NativeStream stream) override {
    return api_.cuMemsetD8Async(dst, value, bytes, stream);
  }

  int stream_create(gpu::NativeStream* stream) override {
    return api_.cuStreamCreate(stream, kStreamNonBlocking);
  }
  int stream_destroy(gpu::NativeStream stream) override { return api_.cuStreamDestroy_v2(stream); }
  int stream_synchronize(gpu::NativeStream stream) override {
    return api_.cuStreamSynchronize(stream);
  }
  int stream_wait_event(gpu::NativeStream stream, gpu::NativeEvent event) override {
    return api_.cuStreamWaitEvent(stream, event, 0);
  }

  int event_create(gpu::NativeEvent* event) override {
    return api_.cuEventCreate(event, kEventDefault);
  }
  int event_destroy(gpu::NativeEvent event) override { return api_.cuEventDestroy_v2(event); }
  int event_record(gpu::NativeEvent event, gpu::NativeStream stream) override {
    return api_.cuEventRecord(event, stream);
  }
  int event_query(gpu::NativeEvent event, bool* complete) override {
    int rc = api_.cuEventQuery(event);
    *complete = rc == 0;
    return rc == gpu::kDriverNotReady ? 0 : rc;
  }
  int event_synchronize(gpu::NativeEvent event) override { return api_.cuEventSynchronize(event); }
  int event_elapsed_ms(gpu::NativeEvent start, gpu::NativeEvent end, float* ms) override {
    return api_.cuEventElapsedTime(ms, start, end);
  }

  int module_load(const void* image, gpu::NativeModule* module) override {
    return api_.cuModuleLoadData(module, image);
  }
  int module_function(gpu::NativeModule module, const char* name,
                      gpu::NativeFunction* function) override {
    return api_.cuModuleGetFunction(function, module, name);
  }
  int launch(gpu::NativeFunction function, const gpu::LaunchGeometry& g, gpu::NativeStream stream,
             void** params) override {
    return api_.cuLaunchKernel(function, g.grid.x, g.grid.y, g.grid.z, g.block.x, g.block.y,
                               g.block.z, g.shared_bytes, stream, params, nullptr);
  }

 private:
  void bind_all() {
#define PC_BIND(name) library_.bind(api_.name, #name)
    PC_BIND(cuInit);
    PC_BIND(cuDeviceGetCount);
    PC_BIND(cuDeviceGet);
    PC_BIND(cuDeviceGetName);
    PC_BIND(cuDeviceTotalMem_v2);
    PC_BIND(cuDeviceGetAttribute);
    PC_BIND(cuDevicePrimaryCtxRetain);
    PC_BIND(cuCtxSetCurrent);
    PC_BIND(cuMemAlloc_v2);
    PC_BIND(cuMemFree_v2);
    PC_BIND(cuMemAllocHost_v2);
    PC_BIND(cuMemFreeHost);
    PC_BIND(cuMemcpy);
    PC_BIND(cuMemcpyAsync);
    PC_BIND(cuMemsetD8Async);
    PC_BIND(cuStreamCreate);
    PC_BIND(cuStreamDestroy_v2);
    PC_BIND(cuStreamSynchronize);
    PC_BIND(cuStreamWaitEvent);
    PC_BIND(cuEventCreate);
    PC_BIND(cuEventDestroy_v2);
    PC_BIND(cuEventRecord);
    PC_BIND(cuEventQuery);
    PC_BIND(cuEventSynchronize);
    PC_BIND(cuEventElapsedTime);
    PC_BIND(cuModuleLoadData);
    PC_BIND(cuModuleGetFunction);
    PC_BIND(cuLaunchKernel);
#undef PC_BIND
  }

  std::vector<const char*> names_;
  gpu::DynamicLibrary library_;
  CudaApi api_{};
  std::mutex mutex_;
  std::vector<CUcontext> contexts_;
};

}  // namespace

std::unique_ptr<gpu::GpuDriver> make_cuda_driver(std::initializer_list<const char*> library_names) {
  return std::make_unique<CudaDriver>(library_names);
}

}  // namespace polychip::cuda
