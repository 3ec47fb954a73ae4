#include "cl_api.hpp"

#include <CL/cl_ext.h>
#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

#include "host/runtime_library.hpp"

namespace polychip::opencl {
namespace {

using Loaded = opencl_family::LoadedApi<ClApi>;

Loaded load() {
  Loaded out;
  const char* library = "libOpenCL.so.1";
  void* handle = opencl_family::open_runtime_library(library, "no OpenCL ICD loader", &out.reason);
  if (!handle) return out;
#define POLYCHIP_CL_LOAD(name)                                                             \
  out.api.name = reinterpret_cast<decltype(out.api.name)>(dlsym(handle, #name));           \
  if (!out.api.name) {                                                                     \
    out.reason = fmt::format("{} lacks {}: not an OpenCL 1.2 ICD loader", library, #name); \
    return out;                                                                            \
  }
  POLYCHIP_CL_FUNCTIONS(POLYCHIP_CL_LOAD)
#undef POLYCHIP_CL_LOAD
  out.ok = true;
  return out;
}

}  // namespace

const ClApi* cl_api(std::string* reason) {
  static const Loaded loaded = load();
  return opencl_family::loaded_api(loaded, reason);
}

std::string cl_error_name(cl_int code) {
  const char* name = "CL_ERROR";
  switch (code) {
    case CL_SUCCESS:
      name = "CL_SUCCESS";
      break;
    case CL_DEVICE_NOT_FOUND:
      name = "CL_DEVICE_NOT_FOUND";
      break;
    case CL_DEVICE_NOT_AVAILABLE:
      name = "CL_DEVICE_NOT_AVAILABLE";
      break;
    case CL_COMPILER_NOT_AVAILABLE:
      name = "CL_COMPILER_NOT_AVAILABLE";
      break;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
      name = "CL_MEM_OBJECT_ALLOCATION_FAILURE";
      break;
    case CL_OUT_OF_RESOURCES:
      name = "CL_OUT_OF_RESOURCES";
      break;
    case CL_OUT_OF_HOST_MEMORY:
      name = "CL_OUT_OF_HOST_MEMORY";
      break;
    case CL_PROFILING_INFO_NOT_AVAILABLE:
      name = "CL_PROFILING_INFO_NOT_AVAILABLE";
      break;
    case CL_BUILD_PROGRAM_FAILURE:
      name = "CL_BUILD_PROGRAM_FAILURE";
      break;
    case CL_INVALID_VALUE:
      name = "CL_INVALID_VALUE";
      break;
    case CL_INVALID_DEVICE:
      name = "CL_INVALID_DEVICE";
      break;
    case CL_INVALID_CONTEXT:
      name = "CL_INVALID_CONTEXT";
      break;
    case CL_INVALID_COMMAND_QUEUE:
      name = "CL_INVALID_COMMAND_QUEUE";
      break;
    case CL_INVALID_MEM_OBJECT:
      name = "CL_INVALID_MEM_OBJECT";
      break;
    case CL_INVALID_BUILD_OPTIONS:
      name = "CL_INVALID_BUILD_OPTIONS";
      break;
    case CL_INVALID_PROGRAM:
      name = "CL_INVALID_PROGRAM";
      break;
    case CL_INVALID_KERNEL_NAME:
      name = "CL_INVALID_KERNEL_NAME";
      break;
    case CL_INVALID_KERNEL:
      name = "CL_INVALID_KERNEL";
      break;
    case CL_INVALID_ARG_INDEX:
      name = "CL_INVALID_ARG_INDEX";
      break;
    case CL_INVALID_ARG_VALUE:
      name = "CL_INVALID_ARG_VALUE";
      break;
    case CL_INVALID_ARG_SIZE:
      name = "CL_INVALID_ARG_SIZE";
      break;
    case CL_INVALID_KERNEL_ARGS:
      name = "CL_INVALID_KERNEL_ARGS";
      break;
    case CL_INVALID_WORK_DIMENSION:
      name = "CL_INVALID_WORK_DIMENSION";
      break;
    case CL_INVALID_WORK_GROUP_SIZE:
      name = "CL_INVALID_WORK_GROUP_SIZE";
      break;
    case CL_INVALID_GLOBAL_WORK_SIZE:
      name = "CL_INVALID_GLOBAL_WORK_SIZE";
      break;
    case CL_INVALID_EVENT:
      name = "CL_INVALID_EVENT";
      break;
    case CL_INVALID_BUFFER_SIZE:
      name = "CL_INVALID_BUFFER_SIZE";
      break;
    case CL_PLATFORM_NOT_FOUND_KHR:
      name = "CL_PLATFORM_NOT_FOUND_KHR";
      break;
    default:
      break;
  }
  return fmt::format("{} ({})", name, code);
}

}  // namespace polychip::opencl
