// Device enumeration: zeInit, every device of every driver, a context per
// driver. Any failure leaves zero devices and says why.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "device_type_id.hpp"
#include "host/abi_checks.hpp"
#include "host/supported_dtypes.hpp"
#include "host/unavailable_reason.hpp"
#include "level_zero_adapter.hpp"

namespace polychip::level_zero {
namespace {

std::unique_ptr<Device> open_device(const ZeApi& api, ze_driver_handle_t driver,
                                    ze_context_handle_t context, ze_device_handle_t handle) {
  auto dev = std::make_unique<Device>();
  dev->driver = driver;
  dev->handle = handle;
  dev->context = context;
  ze_device_properties_t props{};
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  check_ze(api.zeDeviceGetProperties(handle, &props), "zeDeviceGetProperties");
  // With the 1.0 properties struct, timerResolution is in ns per tick.
  dev->timer_ns_per_tick = props.timerResolution ? static_cast<double>(props.timerResolution) : 1.0;
  dev->timestamp_mask = props.kernelTimestampValidBits >= 64
                            ? ~uint64_t{0}
                            : (uint64_t{1} << props.kernelTimestampValidBits) - 1;
  dev->max_alloc_bytes = props.maxMemAllocSize;
  uint32_t mem_count = 0;
  uint64_t memory = 0;
  if (api.zeDeviceGetMemoryProperties(handle, &mem_count, nullptr) == ZE_RESULT_SUCCESS &&
      mem_count > 0) {
    std::vector<ze_device_memory_properties_t> mems(mem_count);
    for (auto& m : mems) m.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
    if (api.zeDeviceGetMemoryProperties(handle, &mem_count, mems.data()) == ZE_RESULT_SUCCESS)
      for (const auto& m : mems) memory += m.totalSize;
  }
  ze_device_module_properties_t module{};
  module.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
  if (api.zeDeviceGetModuleProperties(handle, &module) == ZE_RESULT_SUCCESS)
    dev->has_fp64 = (module.flags & ZE_DEVICE_MODULE_FLAG_FP64) != 0;
  auto& p = dev->properties;
  p.struct_size = POLYCHIP_STRUCT_SIZE(polychip_device_properties, compute_units);
  std::string id = device_type_id(props.vendorId, props.name, POLYCHIP_DEVICE_TYPE_MAX - 1);
  std::string name(props.name, strnlen(props.name, sizeof props.name));
  id.copy(p.device_type, sizeof p.device_type - 1);
  name.copy(p.name, sizeof p.name - 1);
  p.memory_bytes = memory;
  p.supported_dtypes = opencl_family::supported_dtypes(dev->has_fp64);
  p.capabilities = POLYCHIP_CAP_ASYNC_COPY | POLYCHIP_CAP_TIMING_EVENTS | POLYCHIP_CAP_COPY_ENGINE |
                   POLYCHIP_CAP_NETWORK_EXPORT;
  p.compute_units =
      static_cast<int32_t>(props.numSlices * props.numSubslicesPerSlice * props.numEUsPerSubslice);
  return dev;
}

Platform enumerate() {
  Platform out;
  std::string reason;
  out.ze = ze_api(&reason);
  if (!out.ze) {
    out.unavailable_reason = reason;
    return out;
  }
  const ZeApi& api = *out.ze;
  ze_result_t r = api.zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (r != ZE_RESULT_SUCCESS) {
    out.unavailable_reason = fmt::format("no Level Zero driver (zeInit: {})", ze_result_name(r));
    return out;
  }
  uint32_t driver_count = 0;
  r = api.zeDriverGet(&driver_count, nullptr);
  if (r != ZE_RESULT_SUCCESS || driver_count == 0) {
    out.unavailable_reason = fmt::format("no Level Zero driver (zeDriverGet: {}, {} drivers)",
                                         ze_result_name(r), driver_count);
    return out;
  }
  std::vector<ze_driver_handle_t> drivers(driver_count);
  api.zeDriverGet(&driver_count, drivers.data());
  std::vector<std::string> problems;
  for (ze_driver_handle_t driver : drivers) {
    uint32_t n = 0;
    if (api.zeDeviceGet(driver, &n, nullptr) != ZE_RESULT_SUCCESS || n == 0) continue;
    std::vector<ze_device_handle_t> handles(n);
    api.zeDeviceGet(driver, &n, handles.data());
    ze_context_desc_t desc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
    ze_context_handle_t context = nullptr;
    r = api.zeContextCreate(driver, &desc, &context);
    if (r != ZE_RESULT_SUCCESS) {
      problems.push_back(fmt::format("zeContextCreate: {}", ze_result_name(r)));
      continue;
    }
    for (ze_device_handle_t h : handles) {
      try {
        out.devices.push_back(open_device(api, driver, context, h));
      } catch (const Failure& f) {
        problems.push_back(f.message);
      }
    }
  }
  if (out.devices.empty())
    out.unavailable_reason = opencl_family::no_device_reason(
        "Level Zero", "Level Zero drivers have no devices", problems);
  return out;
}

}  // namespace

Platform& platform() {
  static Platform p = enumerate();
  return p;
}

Device& device_at(int32_t index) {
  return opencl_family::device_at(platform().devices, index, "level_zero");
}

const ZeApi& ze() {
  if (!platform().ze) fail(POLYCHIP_UNAVAILABLE, platform().unavailable_reason);
  return *platform().ze;
}

void check_ze(ze_result_t result, const char* call) {
  if (result == ZE_RESULT_SUCCESS) return;
  polychip_status status = POLYCHIP_INTERNAL;
  switch (result) {
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
    case ZE_RESULT_ERROR_UNSUPPORTED_SIZE:
      status = POLYCHIP_OUT_OF_MEMORY;
      break;
    case ZE_RESULT_ERROR_UNINITIALIZED:
    case ZE_RESULT_ERROR_DEVICE_LOST:
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
    case ZE_RESULT_ERROR_MODULE_BUILD_FAILURE:
      status = POLYCHIP_UNAVAILABLE;
      break;
    default:
      break;
  }
  fail(status, fmt::format("{} failed: {}", call, ze_result_name(result)));
}

ze_command_list_handle_t create_command_list(Device& dev) {
  ze_command_list_desc_t desc{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr,
                              dev.compute_queue_ordinal, 0};
  ze_command_list_handle_t list = nullptr;
  check_ze(ze().zeCommandListCreate(dev.context, dev.handle, &desc, &list), "zeCommandListCreate");
  return list;
}

Stream::~Stream() {
  try {
    synchronize();
  } catch (const Failure&) {
  }
  ze().zeCommandQueueDestroy(queue_);
}

void Stream::submit_list(Device& dev, ze_command_list_handle_t list) {
  ze_result_t r = ze().zeCommandListClose(list);
  if (r == ZE_RESULT_SUCCESS) r = ze().zeCommandQueueExecuteCommandLists(queue_, 1, &list, nullptr);
  if (r != ZE_RESULT_SUCCESS) {
    ze().zeCommandListDestroy(list);
    check_ze(r, "zeCommandQueueExecuteCommandLists");
  }
  std::lock_guard lock(mutex_);
  pending_.push_back(list);
}

void Stream::synchronize() {
  check_ze(ze().zeCommandQueueSynchronize(queue_, UINT64_MAX), "zeCommandQueueSynchronize");
  std::vector<ze_command_list_handle_t> done;
  {
    std::lock_guard lock(mutex_);
    done.swap(pending_);
  }
  for (auto list : done) ze().zeCommandListDestroy(list);
}

}  // namespace polychip::level_zero
