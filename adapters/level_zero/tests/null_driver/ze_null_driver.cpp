// A minimal Level Zero driver for tests ("libze_null.so.1"): the loader
// loads it when ZE_ENABLE_NULL_DRIVER=1. One device whose memory is host
// memory; command lists are recorded and run in order on the host when a
// queue executes them; events record host timestamps. It cannot run
// kernels: modules are accepted when they are SPIR-V, kernels are created
// when their name is an entry point of it, arguments and group sizes are
// recorded, and the launch itself is recorded and then refused with
// ZE_RESULT_ERROR_UNSUPPORTED_FEATURE ("cannot execute kernels"). Tests
// read the last launch through ze_null_last_launch() to check the
// adapter's launch geometry and argument packing.
//
// The loader (1.8) asks every driver for every ze/zet/zes DDI table and
// fails zeInit unless each is provided; tables of features not implemented
// here are returned empty (null entries: the loader reports
// ZE_RESULT_ERROR_UNSUPPORTED_FEATURE for them).
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct NullDriver {
  int tag;
};
struct NullDevice {
  int tag;
};
NullDriver g_driver{1};
NullDevice g_device{2};
constexpr uint64_t kDeviceMemory = uint64_t{1} << 30;

struct Context {
  std::mutex mutex;
  std::map<void*, size_t> allocations;
};
struct Event {
  bool signaled = false;
  uint64_t start = 0, end = 0;
};
struct EventPool {
  uint32_t count;
};
struct CommandList {
  bool closed = false;
  std::vector<std::function<ze_result_t()>> commands;
};
struct CommandQueue {
  int tag;
};
struct BuildLog {
  std::string text;
};
struct Module {
  std::string spirv;
};
struct Kernel {
  std::string name;
  uint32_t group[3] = {1, 1, 1};
  std::map<uint32_t, std::string> args;  // index -> the argument's bytes
};
struct Launch {
  std::string name;
  uint32_t group[3] = {0, 0, 0};
  uint32_t count[3] = {0, 0, 0};
  std::vector<std::string> args;
};
std::mutex g_launch_mutex;
Launch g_last_launch;

ze_driver_handle_t as_handle(NullDriver* d) { return reinterpret_cast<ze_driver_handle_t>(d); }
ze_device_handle_t as_handle(NullDevice* d) { return reinterpret_cast<ze_device_handle_t>(d); }
template <typename T, typename H>
T* from(H h) {
  return reinterpret_cast<T*>(h);
}

// --- driver and device --------------------------------------------------
ze_result_t ZE_APICALL Init(ze_init_flags_t) { return ZE_RESULT_SUCCESS; }

ze_result_t ZE_APICALL DriverGet(uint32_t* count, ze_driver_handle_t* drivers) {
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (drivers && *count >= 1) drivers[0] = as_handle(&g_driver);
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DriverGetApiVersion(ze_driver_handle_t, ze_api_version_t* v) {
  *v = ZE_API_VERSION_CURRENT;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DriverGetProperties(ze_driver_handle_t, ze_driver_properties_t* p) {
  std::memset(&p->uuid, 0, sizeof p->uuid);
  p->driverVersion = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGet(ze_driver_handle_t, uint32_t* count, ze_device_handle_t* out) {
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (out && *count >= 1) out[0] = as_handle(&g_device);
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetProperties(ze_device_handle_t, ze_device_properties_t* p) {
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  void* next = p->pNext;
  ze_structure_type_t stype = p->stype;
  std::memset(p, 0, sizeof *p);
  p->stype = stype;
  p->pNext = next;
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0;
  p->deviceId = 1;
  p->coreClockRate = 1000;
  p->maxMemAllocSize = kDeviceMemory;
  p->maxHardwareContexts = 1;
  p->maxCommandQueuePriority = 0;
  p->numThreadsPerEU = 1;
  p->physicalEUSimdWidth = 8;
  p->numEUsPerSubslice = 1;
  p->numSubslicesPerSlice = 1;
  p->numSlices = 1;
  p->timerResolution = 1;  // 1 ns per tick
  p->timestampValidBits = 64;
  p->kernelTimestampValidBits = 64;
  std::snprintf(p->name, sizeof p->name, "polychip null device");
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetMemoryProperties(ze_device_handle_t, uint32_t* count,
                                                 ze_device_memory_properties_t* p) {
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (p && *count >= 1) {
    p[0].flags = 0;
    p[0].maxClockRate = 1000;
    p[0].maxBusWidth = 64;
    p[0].totalSize = kDeviceMemory;
    std::snprintf(p[0].name, sizeof p[0].name, "host");
  }
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL DeviceGetModuleProperties(ze_device_handle_t,
                                                 ze_device_module_properties_t* p) {
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
  p->flags = ZE_DEVICE_MODULE_FLAG_FP16 | ZE_DEVICE_MODULE_FLAG_FP64;
  p->maxArgumentsSize = 2048;
  p->printfBufferSize = 0;
  return ZE_RESULT_SUCCESS;
}

// --- context and memory ---------------------------------------------------
ze_result_t ZE_APICALL ContextCreate(ze_driver_handle_t, const ze_context_desc_t*,
                                     ze_context_handle_t* out) {
  *out = reinterpret_cast<ze_context_handle_t>(new Context);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL ContextDestroy(ze_context_handle_t c) {
  delete from<Context>(c);
  return ZE_RESULT_SUCCESS;
}

ze_result_t allocate(ze_context_handle_t c, size_t size, size_t alignment, void** out) {
  if (!c || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (size == 0 || size > kDeviceMemory) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  size_t a = alignment ? alignment : 64;
  if (a & (a - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  void* p = std::aligned_alloc(a, (size + a - 1) / a * a);
  if (!p) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  auto* ctx = from<Context>(c);
  std::lock_guard lock(ctx->mutex);
  ctx->allocations[p] = size;
  *out = p;
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL MemAllocDevice(ze_context_handle_t c, const ze_device_mem_alloc_desc_t*,
                                      size_t size, size_t alignment, ze_device_handle_t,
                                      void** out) {
  return allocate(c, size, alignment, out);
}
ze_result_t ZE_APICALL MemAllocHost(ze_context_handle_t c, const ze_host_mem_alloc_desc_t*,
                                    size_t size, size_t alignment, void** out) {
  return allocate(c, size, alignment, out);
}
ze_result_t ZE_APICALL MemFree(ze_context_handle_t c, void* p) {
  auto* ctx = from<Context>(c);
  std::lock_guard lock(ctx->mutex);
  if (!ctx->allocations.erase(p)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  std::free(p);
  return ZE_RESULT_SUCCESS;
}

// --- command queues and lists ---------------------------------------------
ze_result_t ZE_APICALL QueueCreate(ze_context_handle_t, ze_device_handle_t,
                                   const ze_command_queue_desc_t*, ze_command_queue_handle_t* out) {
  *out = reinterpret_cast<ze_command_queue_handle_t>(new CommandQueue{0});
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL QueueDestroy(ze_command_queue_handle_t q) {
  delete from<CommandQueue>(q);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL QueueExecute(ze_command_queue_handle_t, uint32_t n,
                                    ze_command_list_handle_t* lists, ze_fence_handle_t) {
  for (uint32_t i = 0; i < n; ++i) {
    auto* l = from<CommandList>(lists[i]);
    if (!l->closed) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    for (auto& c : l->commands)
      if (ze_result_t r = c(); r != ZE_RESULT_SUCCESS) return r;
  }
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL QueueSynchronize(ze_command_queue_handle_t, uint64_t) {
  return ZE_RESULT_SUCCESS;  // execution is synchronous
}

ze_result_t ZE_APICALL ListCreate(ze_context_handle_t, ze_device_handle_t,
                                  const ze_command_list_desc_t*, ze_command_list_handle_t* out) {
  *out = reinterpret_cast<ze_command_list_handle_t>(new CommandList);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL ListDestroy(ze_command_list_handle_t l) {
  delete from<CommandList>(l);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL ListClose(ze_command_list_handle_t l) {
  from<CommandList>(l)->closed = true;
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL ListReset(ze_command_list_handle_t l) {
  auto* list = from<CommandList>(l);
  list->closed = false;
  list->commands.clear();
  return ZE_RESULT_SUCCESS;
}

void signal(Event* e, uint64_t start) {
  e->start = start;
  e->end = now_ns();
  e->signaled = true;
}

ze_result_t wait_all(uint32_t n, ze_event_handle_t* events) {
  for (uint32_t i = 0; i < n; ++i)
    if (!from<Event>(events[i])->signaled) return ZE_RESULT_ERROR_NOT_AVAILABLE;  // would hang
  return ZE_RESULT_SUCCESS;
}

ze_result_t append(ze_command_list_handle_t l, std::function<ze_result_t()> body,
                   ze_event_handle_t signal_event, uint32_t num_waits, ze_event_handle_t* waits) {
  auto* list = from<CommandList>(l);
  if (list->closed) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  std::vector<ze_event_handle_t> wait_list(waits, waits + num_waits);
  list->commands.push_back([=]() -> ze_result_t {
    auto w = wait_list;
    if (ze_result_t r = wait_all(static_cast<uint32_t>(w.size()), w.data()); r != ZE_RESULT_SUCCESS)
      return r;
    uint64_t start = now_ns();
    if (ze_result_t r = body(); r != ZE_RESULT_SUCCESS) return r;
    if (signal_event) signal(from<Event>(signal_event), start);
    return ZE_RESULT_SUCCESS;
  });
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL AppendMemoryCopy(ze_command_list_handle_t l, void* dst, const void* src,
                                        size_t size, ze_event_handle_t ev, uint32_t n,
                                        ze_event_handle_t* waits) {
  if (!dst || !src) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return append(
      l,
      [=] {
        std::memmove(dst, src, size);
        return ZE_RESULT_SUCCESS;
      },
      ev, n, waits);
}
ze_result_t ZE_APICALL AppendBarrier(ze_command_list_handle_t l, ze_event_handle_t ev, uint32_t n,
                                     ze_event_handle_t* waits) {
  return append(
      l, [] { return ZE_RESULT_SUCCESS; }, ev, n, waits);
}
ze_result_t ZE_APICALL AppendWaitOnEvents(ze_command_list_handle_t l, uint32_t n,
                                          ze_event_handle_t* waits) {
  return append(
      l, [] { return ZE_RESULT_SUCCESS; }, nullptr, n, waits);
}
ze_result_t ZE_APICALL AppendSignalEvent(ze_command_list_handle_t l, ze_event_handle_t ev) {
  return append(
      l, [] { return ZE_RESULT_SUCCESS; }, ev, 0, nullptr);
}

// --- events ---------------------------------------------------------------
ze_result_t ZE_APICALL PoolCreate(ze_context_handle_t, const ze_event_pool_desc_t* desc, uint32_t,
                                  ze_device_handle_t*, ze_event_pool_handle_t* out) {
  *out = reinterpret_cast<ze_event_pool_handle_t>(new EventPool{desc ? desc->count : 0});
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL PoolDestroy(ze_event_pool_handle_t p) {
  delete from<EventPool>(p);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL EventCreate(ze_event_pool_handle_t p, const ze_event_desc_t* desc,
                                   ze_event_handle_t* out) {
  if (!desc || desc->index >= from<EventPool>(p)->count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *out = reinterpret_cast<ze_event_handle_t>(new Event);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL EventDestroy(ze_event_handle_t e) {
  delete from<Event>(e);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL EventHostSignal(ze_event_handle_t e) {
  signal(from<Event>(e), now_ns());
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL EventHostSynchronize(ze_event_handle_t e, uint64_t) {
  // Nothing runs asynchronously: an unsignalled event never will be.
  return from<Event>(e)->signaled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}
ze_result_t ZE_APICALL EventQueryStatus(ze_event_handle_t e) {
  return from<Event>(e)->signaled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}
ze_result_t ZE_APICALL EventHostReset(ze_event_handle_t e) {
  *from<Event>(e) = Event{};
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL EventQueryKernelTimestamp(ze_event_handle_t e,
                                                 ze_kernel_timestamp_result_t* out) {
  auto* ev = from<Event>(e);
  if (!ev->signaled) return ZE_RESULT_NOT_READY;
  out->global = {ev->start, ev->end};
  out->context = {ev->start, ev->end};
  return ZE_RESULT_SUCCESS;
}

// --- modules and kernels: checked and recorded, never executed -----------
ze_result_t ZE_APICALL ModuleCreate(ze_context_handle_t, ze_device_handle_t,
                                    const ze_module_desc_t* desc, ze_module_handle_t* out,
                                    ze_module_build_log_handle_t* log_out) {
  auto* log = new BuildLog;
  ze_result_t r = ZE_RESULT_SUCCESS;
  uint32_t magic = 0;
  if (!desc || desc->format != ZE_MODULE_FORMAT_IL_SPIRV || desc->inputSize < 20) {
    log->text = "polychip null driver: only SPIR-V modules are accepted";
    r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
  } else if (std::memcpy(&magic, desc->pInputModule, 4), magic != 0x07230203u) {
    log->text = "polychip null driver: input is not SPIR-V (bad magic number)";
    r = ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
  } else {
    log->text = "polychip null driver: valid SPIR-V of " + std::to_string(desc->inputSize) +
                " bytes; this test driver cannot execute kernels";
  }
  if (out)
    *out = r == ZE_RESULT_SUCCESS
               ? reinterpret_cast<ze_module_handle_t>(new Module{std::string(
                     reinterpret_cast<const char*>(desc->pInputModule), desc->inputSize)})
               : nullptr;
  if (log_out)
    *log_out = reinterpret_cast<ze_module_build_log_handle_t>(log);
  else
    delete log;
  return r;
}
ze_result_t ZE_APICALL ModuleDestroy(ze_module_handle_t m) {
  delete from<Module>(m);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL KernelCreate(ze_module_handle_t m, const ze_kernel_desc_t* desc,
                                    ze_kernel_handle_t* out) {
  if (!desc || !desc->pKernelName) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  // Entry point names are literal strings in SPIR-V, NUL-terminated.
  std::string name(desc->pKernelName);
  if (from<Module>(m)->spirv.find(name + '\0') == std::string::npos)
    return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  auto* k = new Kernel;
  k->name = name;
  *out = reinterpret_cast<ze_kernel_handle_t>(k);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL KernelDestroy(ze_kernel_handle_t k) {
  delete from<Kernel>(k);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL KernelSetGroupSize(ze_kernel_handle_t k, uint32_t x, uint32_t y,
                                          uint32_t z) {
  if (x == 0 || y == 0 || z == 0 || uint64_t{x} * y * z > 1024)
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  auto* kernel = from<Kernel>(k);
  kernel->group[0] = x;
  kernel->group[1] = y;
  kernel->group[2] = z;
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL KernelSetArgumentValue(ze_kernel_handle_t k, uint32_t index, size_t size,
                                              const void* value) {
  std::string bytes(size, '\0');
  if (value) std::memcpy(bytes.data(), value, size);
  from<Kernel>(k)->args[index] = bytes;
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL AppendLaunchKernel(ze_command_list_handle_t, ze_kernel_handle_t k,
                                          const ze_group_count_t* count, ze_event_handle_t,
                                          uint32_t, ze_event_handle_t*) {
  auto* kernel = from<Kernel>(k);
  Launch l;
  l.name = kernel->name;
  for (int d = 0; d < 3; ++d) l.group[d] = kernel->group[d];
  l.count[0] = count->groupCountX;
  l.count[1] = count->groupCountY;
  l.count[2] = count->groupCountZ;
  for (const auto& [index, bytes] : kernel->args) {
    if (index != l.args.size()) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // a gap: unset argument
    l.args.push_back(bytes);
  }
  std::lock_guard lock(g_launch_mutex);
  g_last_launch = std::move(l);
  return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;  // recorded, but cannot execute
}
ze_result_t ZE_APICALL BuildLogDestroy(ze_module_build_log_handle_t l) {
  delete from<BuildLog>(l);
  return ZE_RESULT_SUCCESS;
}
ze_result_t ZE_APICALL BuildLogGetString(ze_module_build_log_handle_t l, size_t* size, char* text) {
  const std::string& s = from<BuildLog>(l)->text;
  if (text && *size > 0) {
    size_t n = std::min(*size - 1, s.size());
    std::memcpy(text, s.data(), n);
    text[n] = '\0';
  }
  *size = s.size() + 1;
  return ZE_RESULT_SUCCESS;
}

bool version_ok(ze_api_version_t v) {
  return ZE_MAJOR_VERSION(v) == ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT);
}

}  // namespace

extern "C" {

#define NULL_EXPORT __attribute__((visibility("default"))) ze_result_t ZE_APICALL

NULL_EXPORT zeGetGlobalProcAddrTable(ze_api_version_t v, ze_global_dditable_t* t) {
  if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  *t = {};
  t->pfnInit = Init;
  return ZE_RESULT_SUCCESS;
}
NULL_EXPORT zeGetDriverProcAddrTable(ze_api_version_t v, ze_driver_dditable_t* t) {
  if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  *t = {};
  t->pfnGet = DriverGet;
  t->pfnGetApiVersion = DriverGetApiVersion;
  t->pfnGetProperties = DriverGetProperties;
  return ZE_RESULT_SUCCESS;
}
NULL_EXPORT zeGetDeviceProcAddrTable(ze_api_version_t v, ze_device_dditable_t* t) {
  if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  *t = {};
  t->pfnGet = DeviceGet;
  t->pfnGetProperties = DeviceGetProperties;
  t->pfnGetMemoryProperties = DeviceGetMemoryProperties;
  t->pfnGetModuleProperties = DeviceGetModuleProperties;
  return ZE_RESULT_SUCCESS;
}
NULL_EXPORT zeGetContextProcAddrTable(ze_api_version_t v, ze_context_dditable_t* t) {
  if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  *t = {};
  t->pfnCreate = ContextCreate;
  t->pfnDestroy = ContextDestroy;
  return ZE_RESULT_SUCCESS;
}
NULL_EXPORT zeGetCommandQueueProcAddrTable(ze_api_version_t v, ze_command_queue_dditable_t* t) {
  if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  *t = {};
  t->pfnCreate = QueueCreate;
  t->pfnDestroy = QueueDestroy;
  t->pfnExecuteCommandLists = QueueExecute;
  t->pfnSynchronize = QueueSynchronize;
  return ZE_RESULT_SUCCESS;
}
NULL_EXPORT zeGetCommandListProcAddrTable(ze_api_version_t v, ze_command_list_dditable_t* t) {
  if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  *t = {};
  t->pfnCreate = ListCreate;
  t->pfnDestroy = ListDestroy;
  t->pfnClose = ListClose;
  t->pfnReset = ListReset;
  t->pfnAppendMemoryCopy = AppendMemoryCopy;
  t->pfnAppendBarrier = AppendBarrier;
  t->pfnAppendWaitOnEvents = AppendWaitOnEvents;
  t->pfnAppendSignalEvent = AppendSignalEvent;
  t->pfnAppendLaunchKernel = AppendLaunchKernel;
  return ZE_RESULT_SUCCESS;
}
NULL_EXPORT zeGetEventPoolProcAddrTable(ze_api_version_t v, ze_event_pool_dditable_t* t) {
  if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  *t = {};
  t->pfnCreate = PoolCreate;
  t->pfnDestroy = PoolDestroy;
  return ZE_RESULT_SUCCESS;
}
NULL_EXPORT zeGetEventProcAddrTable(ze_api_version_t v, ze_event_dditable_t* t) {
  if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  *t = {};
  t->pfnCreate = EventCreate;
  t->pfnDestroy = EventDestroy;
  t->pfnHostSignal = EventHostSignal;
  t->pfnHostSynchronize = EventHostSynchronize;
  t->pfnQueryStatus = EventQueryStatus;
  t->pfnHostReset = EventHostReset;
  t->pfnQueryKernelTimestamp = EventQueryKernelTimestamp;
  return ZE_RESULT_SUCCESS;
}
NULL_EXPORT zeGetMemProcAddrTable(ze_api_version_t v, ze_mem_dditable_t* t) {
  if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  *t = {};
  t->pfnAllocDevice = MemAllocDevice;
  t->pfnAllocHost = MemAllocHost;
  t->pfnFree = MemFree;
  return ZE_RESULT_SUCCESS;
}
NULL_EXPORT zeGetModuleProcAddrTable(ze_api_version_t v, ze_module_dditable_t* t) {
  if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  *t = {};
  t->pfnCreate = ModuleCreate;
  t->pfnDestroy = ModuleDestroy;
  return ZE_RESULT_SUCCESS;
}
NULL_EXPORT zeGetKernelProcAddrTable(ze_api_version_t v, ze_kernel_dditable_t* t) {
  if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  *t = {};
  t->pfnCreate = KernelCreate;
  t->pfnDestroy = KernelDestroy;
  t->pfnSetGroupSize = KernelSetGroupSize;
  t->pfnSetArgumentValue = KernelSetArgumentValue;
  return ZE_RESULT_SUCCESS;
}

// The last kernel launch, for tests: its name, group size and count, and
// argument i's bytes (copied into `arg`, at most `capacity`; returns the
// argument's size, or -1 past the last argument).
__attribute__((visibility("default"))) int ze_null_last_launch(char* name, size_t name_capacity,
                                                               uint32_t group[3],
                                                               uint32_t count[3]) {
  std::lock_guard lock(g_launch_mutex);
  std::snprintf(name, name_capacity, "%s", g_last_launch.name.c_str());
  for (int d = 0; d < 3; ++d) {
    group[d] = g_last_launch.group[d];
    count[d] = g_last_launch.count[d];
  }
  return static_cast<int>(g_last_launch.args.size());
}
__attribute__((visibility("default"))) long ze_null_last_launch_arg(uint32_t i, void* arg,
                                                                    size_t capacity) {
  std::lock_guard lock(g_launch_mutex);
  if (i >= g_last_launch.args.size()) return -1;
  const std::string& b = g_last_launch.args[i];
  std::memcpy(arg, b.data(), std::min(capacity, b.size()));
  return static_cast<long>(b.size());
}
NULL_EXPORT zeGetModuleBuildLogProcAddrTable(ze_api_version_t v,
                                             ze_module_build_log_dditable_t* t) {
  if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  *t = {};
  t->pfnDestroy = BuildLogDestroy;
  t->pfnGetString = BuildLogGetString;
  return ZE_RESULT_SUCCESS;
}

// Tables this driver leaves empty.
#define NULL_EMPTY_TABLE(name, type)                                \
  NULL_EXPORT name(ze_api_version_t v, type* t) {                   \
    if (!version_ok(v)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION; \
    *t = {};                                                        \
    return ZE_RESULT_SUCCESS;                                       \
  }
NULL_EMPTY_TABLE(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
NULL_EMPTY_TABLE(zeGetImageProcAddrTable, ze_image_dditable_t)
NULL_EMPTY_TABLE(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
NULL_EMPTY_TABLE(zeGetFenceProcAddrTable, ze_fence_dditable_t)
NULL_EMPTY_TABLE(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
NULL_EMPTY_TABLE(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
NULL_EMPTY_TABLE(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
NULL_EMPTY_TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
NULL_EMPTY_TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)
NULL_EMPTY_TABLE(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
NULL_EMPTY_TABLE(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)
NULL_EMPTY_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t)
NULL_EMPTY_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t)
NULL_EMPTY_TABLE(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
NULL_EMPTY_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t)
NULL_EMPTY_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
NULL_EMPTY_TABLE(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
NULL_EMPTY_TABLE(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
NULL_EMPTY_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t)
NULL_EMPTY_TABLE(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
NULL_EMPTY_TABLE(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
NULL_EMPTY_TABLE(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
NULL_EMPTY_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
NULL_EMPTY_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t)
NULL_EMPTY_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t)
NULL_EMPTY_TABLE(zesGetDeviceProcAddrTable, zes_device_dditable_t)
NULL_EMPTY_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
NULL_EMPTY_TABLE(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
NULL_EMPTY_TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t)
NULL_EMPTY_TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
NULL_EMPTY_TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t)
NULL_EMPTY_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
NULL_EMPTY_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
NULL_EMPTY_TABLE(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
NULL_EMPTY_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
NULL_EMPTY_TABLE(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
NULL_EMPTY_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t)
NULL_EMPTY_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t)
NULL_EMPTY_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t)
NULL_EMPTY_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t)
NULL_EMPTY_TABLE(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)

}  // extern "C"
