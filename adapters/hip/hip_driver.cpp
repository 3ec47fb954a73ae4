#include "hip_driver.hpp"

#include <vector>

#include <fmt/format.h>

#include "gpu_common/dynamic_library.hpp"

namespace polychip::hip {

namespace {

// HIP types and enum values (hip_runtime_api.h of ROCm 5.2), declared here so
// the adapter builds without the HIP headers; tests/hip_enums_test.cpp checks
// them against the headers when present.
using hipError_t = int;
using hipStream_t = void*;
using hipEvent_t = void*;
using hipModule_t = void*;
using hipFunction_t = void*;
constexpr int kAttrMultiprocessorCount = 63;      // hipDeviceAttributeMultiprocessorCount
constexpr int kAttrMaxSharedMemoryPerBlock = 74;  // hipDeviceAttributeMaxSharedMemoryPerBlock
constexpr int kMemcpyDefault = 4;                 // hipMemcpyDefault
constexpr unsigned kStreamNonBlocking = 1;        // hipStreamNonBlocking
constexpr unsigned kHostMallocDefault = 0;        // hipHostMallocDefault

struct HipApi {
  hipError_t (*hipInit)(unsigned);
  hipError_t (*hipGetDeviceCount)(int*);
  hipError_t (*hipDeviceGetName)(char*, int, int);
  hipError_t (*hipDeviceTotalMem)(size_t*, int);
  hipError_t (*hipDeviceGetAttribute)(int*, int, int);
  hipError_t (*hipSetDevice)(int);
  hipError_t (*hipMalloc)(void**, size_t);
  hipError_t (*hipFree)(void*);
  hipError_t (*hipHostMalloc)(void**, size_t, unsigned);
  hipError_t (*hipHostFree)(void*);
  hipError_t (*hipMemcpy)(void*, const void*, size_t, int);
  hipError_t (*hipMemcpyAsync)(void*, const void*, size_t, int, hipStream_t);
  hipError_t (*hipMemsetD8Async)(void*, unsigned char, size_t, hipStream_t);
  hipError_t (*hipStreamCreateWithFlags)(hipStream_t*, unsigned);
  hipError_t (*hipStreamDestroy)(hipStream_t);
  hipError_t (*hipStreamSynchronize)(hipStream_t);
  hipError_t (*hipStreamWaitEvent)(hipStream_t, hipEvent_t, unsigned);
  hipError_t (*hipEventCreate)(hipEvent_t*);
  hipError_t (*hipEventDestroy)(hipEvent_t);
  hipError_t (*hipEventRecord)(hipEvent_t, hipStream_t);
  hipError_t (*hipEventQuery)(hipEvent_t);
  hipError_t (*hipEventSynchronize)(hipEvent_t);
  hipError_t (*hipEventElapsedTime)(float*, hipEvent_t, hipEvent_t);
  hipError_t (*hipModuleLoadData)(hipModule_t*, const void*);
  hipError_t (*hipModuleGetFunction)(hipFunction_t*, hipModule_t, const char*);
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, unsigned, unsigned, hipStream_t, void**, void**);
};

void* ptr(uint64_t address) { return reinterpret_cast<void*>(address); }

class HipDriver final : public gpu::GpuDriver {
 public:
  explicit HipDriver(std::initializer_list<const char*> names) : names_(names) {}

  gpu::Api api() const override { return gpu::Api::kHip; }

  std::string load() override {
    if (std::string e = library_.open(names_); !e.empty()) return e;
    bind_all();
    if (!library_.first_missing().empty())
      return fmt::format("{} lacks {} (runtime too old?)", library_.loaded_name(),
                         library_.first_missing());
    if (int rc = api_.hipInit(0); rc != 0)
      return "no HIP driver: " + gpu::describe_driver_call(gpu::Api::kHip, "hipInit", rc);
    return "";
  }

  // ROCm reports "no device" as hipErrorNoDevice; the adapter turns any
  // error here into zero devices with the message as the reason.
  int device_count(int* count) override { return api_.hipGetDeviceCount(count); }
  int device_name(int device, std::string* name) override {
    char buffer[256] = {};
    if (int rc = api_.hipDeviceGetName(buffer, sizeof buffer - 1, device)) return rc;
    *name = buffer;
    return 0;
  }
  int device_memory_bytes(int device, uint64_t* bytes) override {
    size_t b = 0;
    int rc = api_.hipDeviceTotalMem(&b, device);
    *bytes = b;
    return rc;
  }
  int device_compute_units(int device, int* units) override {
    return api_.hipDeviceGetAttribute(units, kAttrMultiprocessorCount, device);
  }
  int device_max_shared_bytes(int device, int* bytes) override {
    return api_.hipDeviceGetAttribute(bytes, kAttrMaxSharedMemoryPerBlock, device);
  }
  int make_current(int device) override { return api_.hipSetDevice(device); }

  int allocate_device(uint64_t bytes, uint64_t* address) override {
    void* p = nullptr;
    int rc = api_.hipMalloc(&p, bytes);
    *address = reinterpret_cast<uint64_t>(p);
    return rc;
  }
  int free_device(uint64_t address) override { return api_.hipFree(ptr(address)); }
  int allocate_pinned_host(uint64_t bytes, void** host) override {
    return api_.hipHostMalloc(host, bytes, kHostMallocDefault);
  }
  int free_pinned_host(void* host) override { return api_.hipHostFree(host); }
  int copy(uint64_t dst, uint64_t src, uint64_t bytes, gpu::NativeStream stream) override {
    return stream ? api_.hipMemcpyAsync(ptr(dst), ptr(src), bytes, kMemcpyDefault, stream)
                  : api_.hipMemcpy(ptr(dst), ptr(src), bytes, kMemcpyDefault);
  }
  int fill_bytes(uint64_t dst, unsigned char value, uint64_t bytes,
                 gpu::NativeStream stream) override {
    return api_.hipMemsetD8Async(ptr(dst), value, bytes, stream);
  }

  int stream_create(gpu::NativeStream* stream) override {
    return api_.hipStreamCreateWithFlags(stream, kStreamNonBlocking);
  }
  int stream_destroy(gpu::NativeStream stream) override { return api_.hipStreamDestroy(stream); }
  int stream_synchronize(gpu::NativeStream stream) override {
    return api_.hipStreamSynchronize(stream);
  }
  int stream_wait_event(gpu::NativeStream stream, gpu::NativeEvent event) override {
    return api_.hipStreamWaitEvent(stream, event, 0);
  }
  int event_create(gpu::NativeEvent* event) override { return api_.hipEventCreate(event); }
  int event_destroy(gpu::NativeEvent event) override { return api_.hipEventDestroy(event); }
  int event_record(gpu::NativeEvent event, gpu::NativeStream stream) override {
    return api_.hipEventRecord(event, stream);
  }
  int event_query(gpu::NativeEvent event, bool* complete) override {
    int rc = api_.hipEventQuery(event);
    *complete = rc == 0;
    return rc == gpu::kDriverNotReady ? 0 : rc;
  }
  int event_synchronize(gpu::NativeEvent event) override { return api_.hipEventSynchronize(event); }
  int event_elapsed_ms(gpu::NativeEvent start, gpu::NativeEvent end, float* ms) override {
    return api_.hipEventElapsedTime(ms, start, end);
  }
  int module_load(const void* image, gpu::NativeModule* module) override {
    return api_.hipModuleLoadData(module, image);
  }
  int module_function(gpu::NativeModule module, const char* name,
                      gpu::NativeFunction* function) override {
    return api_.hipModuleGetFunction(function, module, name);
  }
  int launch(gpu::NativeFunction function, const gpu::LaunchGeometry& g, gpu::NativeStream stream,
             void** params) override {
    return api_.hipModuleLaunchKernel(function, g.grid.x, g.grid.y, g.grid.z, g.block.x, g.block.y,
                                      g.block.z, g.shared_bytes, stream, params, nullptr);
  }

 private:
  void bind_all() {
#define PC_BIND(name) library_.bind(api_.name, #name)
    PC_BIND(hipInit);
    PC_BIND(hipGetDeviceCount);
    PC_BIND(hipDeviceGetName);
    PC_BIND(hipDeviceTotalMem);
    PC_BIND(hipDeviceGetAttribute);
    PC_BIND(hipSetDevice);
    PC_BIND(hipMalloc);
    PC_BIND(hipFree);
    PC_BIND(hipHostMalloc);
    PC_BIND(hipHostFree);
    PC_BIND(hipMemcpy);
    PC_BIND(hipMemcpyAsync);
    PC_BIND(hipMemsetD8Async);
    PC_BIND(hipStreamCreateWithFlags);
    PC_BIND(hipStreamDestroy);
    PC_BIND(hipStreamSynchronize);
    PC_BIND(hipStreamWaitEvent);
    PC_BIND(hipEventCreate);
    PC_BIND(hipEventDestroy);
    PC_BIND(hipEventRecord);
    PC_BIND(hipEventQuery);
    PC_BIND(hipEventSynchronize);
    PC_BIND(hipEventElapsedTime);
    PC_BIND(hipModuleLoadData);
    PC_BIND(hipModuleGetFunction);
    PC_BIND(hipModuleLaunchKernel);
#undef PC_BIND
  }

  std::vector<const char*> names_;
  gpu::DynamicLibrary library_;
  HipApi api_{};
};

}  // namespace

std::unique_ptr<gpu::GpuDriver> make_hip_driver(std::initializer_list<const char*> library_names) {
  return std::make_unique<HipDriver>(library_names);
}

}  // namespace polychip::hip
