// Device enumeration: every device of every OpenCL platform, each with its
// own context and a queue for synchronous copies.
#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "device_type_id.hpp"
#include "host/abi_checks.hpp"
#include "host/supported_dtypes.hpp"
#include "host/unavailable_reason.hpp"
#include "opencl_adapter.hpp"

namespace polychip::opencl {
namespace {

std::string platform_string(const ClApi& api, cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (api.clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  api.clGetPlatformInfo(p, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string device_string(const ClApi& api, cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (api.clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  api.clGetDeviceInfo(d, what, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T device_value(const ClApi& api, cl_device_id d, cl_device_info what) {
  T v{};
  api.clGetDeviceInfo(d, what, sizeof v, &v, nullptr);
  return v;
}

void copy_string(char* dst, size_t capacity, const std::string& src) {
  size_t n = std::min(capacity - 1, src.size());
  std::copy(src.begin(), src.begin() + static_cast<std::ptrdiff_t>(n), dst);
  dst[n] = '\0';
}

std::unique_ptr<Device> open_device(const ClApi& api, cl_platform_id platform, cl_device_id id,
                                    std::string* error) {
  auto dev = std::make_unique<Device>();
  dev->platform = platform;
  dev->id = id;
  cl_int err = CL_SUCCESS;
  dev->context = api.clCreateContext(nullptr, 1, &id, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) {
    *error = fmt::format("clCreateContext: {}", cl_error_name(err));
    return nullptr;
  }
  dev->sync_queue = api.clCreateCommandQueue(dev->context, id, 0, &err);
  if (err != CL_SUCCESS) {
    api.clReleaseContext(dev->context);
    *error = fmt::format("clCreateCommandQueue: {}", cl_error_name(err));
    return nullptr;
  }
  std::string extensions = device_string(api, id, CL_DEVICE_EXTENSIONS);
  dev->has_fp64 = extensions.find("cl_khr_fp64") != std::string::npos;
  auto fp = device_value<cl_device_fp_config>(api, id, CL_DEVICE_SINGLE_FP_CONFIG);
  dev->correctly_rounded_divide_sqrt = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  dev->max_alloc_bytes = device_value<cl_ulong>(api, id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);

  auto& p = dev->properties;
  p.struct_size = POLYCHIP_STRUCT_SIZE(polychip_device_properties, compute_units);
  auto type = device_value<cl_device_type>(api, id, CL_DEVICE_TYPE);
  std::string name = device_string(api, id, CL_DEVICE_NAME);
  copy_string(p.device_type, sizeof p.device_type,
              device_type_id(platform_string(api, platform, CL_PLATFORM_NAME), name,
                             (type & CL_DEVICE_TYPE_CPU) != 0, POLYCHIP_DEVICE_TYPE_MAX - 1));
  copy_string(p.name, sizeof p.name, name);
  p.memory_bytes = device_value<cl_ulong>(api, id, CL_DEVICE_GLOBAL_MEM_SIZE);
  p.supported_dtypes = opencl_family::supported_dtypes(dev->has_fp64);
  p.capabilities = POLYCHIP_CAP_ASYNC_COPY | POLYCHIP_CAP_TIMING_EVENTS;
  // A CPU device (PoCL) copies with the host's own cores.
  if ((type & CL_DEVICE_TYPE_CPU) == 0) p.capabilities |= POLYCHIP_CAP_COPY_ENGINE;
  p.compute_units =
      static_cast<int32_t>(device_value<cl_uint>(api, id, CL_DEVICE_MAX_COMPUTE_UNITS));
  return dev;
}

Platforms enumerate() {
  Platforms out;
  std::string reason;
  out.cl = cl_api(&reason);
  if (!out.cl) {
    out.unavailable_reason = reason;
    return out;
  }
  const ClApi& api = *out.cl;
  cl_uint count = 0;
  cl_int err = api.clGetPlatformIDs(0, nullptr, &count);
  if (err != CL_SUCCESS || count == 0) {
    out.unavailable_reason =
        err == CL_SUCCESS
            ? "no OpenCL platform installed (no ICD found)"
            : fmt::format("no OpenCL platform (clGetPlatformIDs: {})", cl_error_name(err));
    return out;
  }
  std::vector<cl_platform_id> ids(count);
  api.clGetPlatformIDs(count, ids.data(), nullptr);
  std::vector<std::string> problems;
  for (cl_platform_id platform : ids) {
    cl_uint n = 0;
    if (api.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0)
      continue;
    std::vector<cl_device_id> devices(n);
    api.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n, devices.data(), nullptr);
    for (cl_device_id d : devices) {
      std::string problem;
      if (auto dev = open_device(api, platform, d, &problem))
        out.devices.push_back(std::move(dev));
      else
        problems.push_back(problem);
    }
  }
  if (out.devices.empty())
    out.unavailable_reason =
        opencl_family::no_device_reason("OpenCL", "OpenCL platforms have no devices", problems);
  return out;
}

}  // namespace

Platforms& platforms() {
  static Platforms p = enumerate();
  return p;
}

Device& device_at(int32_t index) {
  return opencl_family::device_at(platforms().devices, index, "opencl");
}

const ClApi& cl() {
  if (!platforms().cl) fail(POLYCHIP_UNAVAILABLE, platforms().unavailable_reason);
  return *platforms().cl;
}

void check_cl(cl_int err, const char* call) {
  if (err == CL_SUCCESS) return;
  polychip_status status = POLYCHIP_INTERNAL;
  switch (err) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_OUT_OF_RESOURCES:
    case CL_INVALID_BUFFER_SIZE:
      status = POLYCHIP_OUT_OF_MEMORY;
      break;
    case CL_DEVICE_NOT_AVAILABLE:
    case CL_COMPILER_NOT_AVAILABLE:
      status = POLYCHIP_UNAVAILABLE;
      break;
    default:
      break;
  }
  fail(status, fmt::format("{} failed: {}", call, cl_error_name(err)));
}

}  // namespace polychip::opencl
