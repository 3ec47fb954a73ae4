#include "ze_api.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "host/runtime_library.hpp"

namespace polychip::level_zero {
namespace {

using Loaded = opencl_family::LoadedApi<ZeApi>;

Loaded load() {
  Loaded out;
  const char* library = "libze_loader.so.1";
  void* handle = opencl_family::open_runtime_library(library, "no Level Zero loader", &out.reason);
  if (!handle) return out;
#define POLYCHIP_ZE_LOAD(name)                                                                     \
  out.api.name = reinterpret_cast<decltype(out.api.name)>(dlsym(handle, #name));                   \
  if (!out.api.name) {                                                                             \
    out.reason = fmt::format("{} lacks {}: Level Zero loader too old (need 1.0)", library, #name); \
    return out;                                                                                    \
  }
  POLYCHIP_ZE_FUNCTIONS(POLYCHIP_ZE_LOAD)
#undef POLYCHIP_ZE_LOAD
  out.ok = true;
  return out;
}

}  // namespace

const ZeApi* ze_api(std::string* reason) {
  static const Loaded loaded = load();
  return opencl_family::loaded_api(loaded, reason);
}

std::string ze_result_name(ze_result_t r) {
  const char* name = "ZE_RESULT";
  switch (r) {
    case ZE_RESULT_SUCCESS:
      name = "ZE_RESULT_SUCCESS";
      break;
    case ZE_RESULT_NOT_READY:
      name = "ZE_RESULT_NOT_READY";
      break;
    case ZE_RESULT_ERROR_DEVICE_LOST:
      name = "ZE_RESULT_ERROR_DEVICE_LOST";
      break;
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
      name = "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY";
      break;
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
      name = "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY";
      break;
    case ZE_RESULT_ERROR_MODULE_BUILD_FAILURE:
      name = "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE";
      break;
    case ZE_RESULT_ERROR_UNINITIALIZED:
      name = "ZE_RESULT_ERROR_UNINITIALIZED";
      break;
    case ZE_RESULT_ERROR_UNSUPPORTED_VERSION:
      name = "ZE_RESULT_ERROR_UNSUPPORTED_VERSION";
      break;
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
      name = "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE";
      break;
    case ZE_RESULT_ERROR_INVALID_ARGUMENT:
      name = "ZE_RESULT_ERROR_INVALID_ARGUMENT";
      break;
    case ZE_RESULT_ERROR_INVALID_NULL_HANDLE:
      name = "ZE_RESULT_ERROR_INVALID_NULL_HANDLE";
      break;
    case ZE_RESULT_ERROR_INVALID_NULL_POINTER:
      name = "ZE_RESULT_ERROR_INVALID_NULL_POINTER";
      break;
    case ZE_RESULT_ERROR_INVALID_SIZE:
      name = "ZE_RESULT_ERROR_INVALID_SIZE";
      break;
    case ZE_RESULT_ERROR_UNSUPPORTED_SIZE:
      name = "ZE_RESULT_ERROR_UNSUPPORTED_SIZE";
      break;
    case ZE_RESULT_ERROR_INVALID_KERNEL_NAME:
      name = "ZE_RESULT_ERROR_INVALID_KERNEL_NAME";
      break;
    case ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION:
      name = "ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION";
      break;
    case ZE_RESULT_ERROR_NOT_AVAILABLE:
      name = "ZE_RESULT_ERROR_NOT_AVAILABLE";
      break;
    case ZE_RESULT_ERROR_UNKNOWN:
      name = "ZE_RESULT_ERROR_UNKNOWN";
      break;
    default:
      break;
  }
  return fmt::format("{} (0x{:x})", name, static_cast<uint32_t>(r));
}

}  // namespace polychip::level_zero
