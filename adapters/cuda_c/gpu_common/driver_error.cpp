#include "driver_error.hpp"

#include <fmt/format.h>

namespace polychip::gpu {
namespace {

struct ErrorRow {
  int code;
  const char* cuda_name;
  const char* hip_name;  // nullptr: HIP (ROCm 5.2) has no such code
  polychip_status status;
};

// Values checked against cuda.h and hip_runtime_api.h by
// tests/driver_error_test.cpp when those headers are present.
constexpr ErrorRow kErrors[] = {
    {0, "CUDA_SUCCESS", "hipSuccess", POLYCHIP_OK},
    {1, "CUDA_ERROR_INVALID_VALUE", "hipErrorInvalidValue", POLYCHIP_INVALID_ARGUMENT},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "hipErrorOutOfMemory", POLYCHIP_OUT_OF_MEMORY},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "hipErrorNotInitialized", POLYCHIP_UNAVAILABLE},
    {4, "CUDA_ERROR_DEINITIALIZED", "hipErrorDeinitialized", POLYCHIP_UNAVAILABLE},
    {9, "CUDA_ERROR_INVALID_CONFIGURATION", "hipErrorInvalidConfiguration",
     POLYCHIP_INVALID_ARGUMENT},
    {34, "CUDA_ERROR_STUB_LIBRARY", nullptr, POLYCHIP_UNAVAILABLE},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "hipErrorInsufficientDriver", POLYCHIP_UNAVAILABLE},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", nullptr, POLYCHIP_UNAVAILABLE},
    {98, "CUDA_ERROR_INVALID_DEVICE_FUNCTION", "hipErrorInvalidDeviceFunction", POLYCHIP_NOT_FOUND},
    {100, "CUDA_ERROR_NO_DEVICE", "hipErrorNoDevice", POLYCHIP_UNAVAILABLE},
    {101, "CUDA_ERROR_INVALID_DEVICE", "hipErrorInvalidDevice", POLYCHIP_INVALID_ARGUMENT},
    {200, "CUDA_ERROR_INVALID_IMAGE", "hipErrorInvalidImage", POLYCHIP_UNSUPPORTED},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "hipErrorInvalidContext", POLYCHIP_INTERNAL},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "hipErrorNoBinaryForGpu", POLYCHIP_UNSUPPORTED},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE", "hipErrorECCNotCorrectable", POLYCHIP_DATA_CORRUPTION},
    {218, "CUDA_ERROR_INVALID_PTX", "hipErrorInvalidKernelFile", POLYCHIP_UNSUPPORTED},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", nullptr, POLYCHIP_UNSUPPORTED},
    {301, "CUDA_ERROR_FILE_NOT_FOUND", "hipErrorFileNotFound", POLYCHIP_NOT_FOUND},
    {303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", "hipErrorSharedObjectInitFailed",
     POLYCHIP_UNAVAILABLE},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "hipErrorOperatingSystem", POLYCHIP_INTERNAL},
    {400, "CUDA_ERROR_INVALID_HANDLE", "hipErrorInvalidHandle", POLYCHIP_INVALID_ARGUMENT},
    {500, "CUDA_ERROR_NOT_FOUND", "hipErrorNotFound", POLYCHIP_NOT_FOUND},
    {600, "CUDA_ERROR_NOT_READY", "hipErrorNotReady", POLYCHIP_FAILED_PRECONDITION},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "hipErrorIllegalAddress", POLYCHIP_ABORTED},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "hipErrorLaunchOutOfResources",
     POLYCHIP_UNSUPPORTED},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "hipErrorLaunchTimeOut", POLYCHIP_DEADLINE_EXCEEDED},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "hipErrorContextIsDestroyed", POLYCHIP_ABORTED},
    {710, "CUDA_ERROR_ASSERT", "hipErrorAssert", POLYCHIP_ABORTED},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", nullptr, POLYCHIP_ABORTED},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", nullptr, POLYCHIP_ABORTED},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", nullptr, POLYCHIP_ABORTED},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "hipErrorLaunchFailure", POLYCHIP_ABORTED},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "hipErrorNotSupported", POLYCHIP_UNSUPPORTED},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", nullptr, POLYCHIP_UNAVAILABLE},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", nullptr, POLYCHIP_UNAVAILABLE},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", nullptr, POLYCHIP_UNAVAILABLE},
    {999, "CUDA_ERROR_UNKNOWN", "hipErrorUnknown", POLYCHIP_INTERNAL},
};

const ErrorRow* find_row(int code) {
  for (const auto& row : kErrors)
    if (row.code == code) return &row;
  return nullptr;
}

}  // namespace

std::string driver_error_name(Api api, int code) {
  const ErrorRow* row = find_row(code);
  const char* name = !row ? nullptr : api == Api::kCuda ? row->cuda_name : row->hip_name;
  return name ? std::string(name) : fmt::format("unknown error {}", code);
}

polychip_status driver_error_status(int code) {
  const ErrorRow* row = find_row(code);
  return row ? row->status : POLYCHIP_INTERNAL;
}

std::string describe_driver_call(Api api, const char* call, int code) {
  return fmt::format("{} returned {} ({})", call, driver_error_name(api, code), code);
}

}  // namespace polychip::gpu
