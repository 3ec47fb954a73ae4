// The Level Zero entry points polychip uses, loaded at run time from the
// loader (libze_loader.so.1) with dlopen, so libpolychip never links it
// (decision 3): where the loader or a driver is missing the adapter reports
// zero devices and the reason.
#pragma once

#include <level_zero/ze_api.h>

#include <string>

namespace polychip::level_zero {

struct ZeApi {
#define POLYCHIP_ZE_FUNCTIONS(X)       \
  X(zeInit)                            \
  X(zeDriverGet)                       \
  X(zeDeviceGet)                       \
  X(zeDeviceGetProperties)             \
  X(zeDeviceGetMemoryProperties)       \
  X(zeDeviceGetModuleProperties)       \
  X(zeContextCreate)                   \
  X(zeContextDestroy)                  \
  X(zeCommandQueueCreate)              \
  X(zeCommandQueueDestroy)             \
  X(zeCommandQueueExecuteCommandLists) \
  X(zeCommandQueueSynchronize)         \
  X(zeCommandListCreate)               \
  X(zeCommandListDestroy)              \
  X(zeCommandListClose)                \
  X(zeCommandListAppendMemoryCopy)     \
  X(zeCommandListAppendBarrier)        \
  X(zeCommandListAppendWaitOnEvents)   \
  X(zeCommandListAppendLaunchKernel)   \
  X(zeEventPoolCreate)                 \
  X(zeEventPoolDestroy)                \
  X(zeEventCreate)                     \
  X(zeEventDestroy)                    \
  X(zeEventHostSynchronize)            \
  X(zeEventQueryStatus)                \
  X(zeEventHostReset)                  \
  X(zeEventQueryKernelTimestamp)       \
  X(zeMemAllocDevice)                  \
  X(zeMemAllocHost)                    \
  X(zeMemFree)                         \
  X(zeModuleCreate)                    \
  X(zeModuleDestroy)                   \
  X(zeModuleBuildLogGetString)         \
  X(zeModuleBuildLogDestroy)           \
  X(zeKernelCreate)                    \
  X(zeKernelDestroy)                   \
  X(zeKernelSetGroupSize)              \
  X(zeKernelSuggestGroupSize)          \
  X(zeKernelSetArgumentValue)
#define POLYCHIP_ZE_DECLARE(name) decltype(&::name) name = nullptr;
  POLYCHIP_ZE_FUNCTIONS(POLYCHIP_ZE_DECLARE)
#undef POLYCHIP_ZE_DECLARE
};

// The process-wide table; nullptr when the loader could not be loaded
// (then `reason` names the library and dlerror's text).
const ZeApi* ze_api(std::string* reason);

// "ZE_RESULT_ERROR_UNINITIALIZED (0x78000001)"
std::string ze_result_name(ze_result_t result);

}  // namespace polychip::level_zero
