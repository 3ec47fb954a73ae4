#include "gpu_common/driver_error.hpp"

#include <gtest/gtest.h>

#ifdef POLYCHIP_HAVE_CUDA_HEADERS
#include <cuda.h>
#endif
#ifdef POLYCHIP_HAVE_HIP_HEADERS
#include <hip/hip_runtime_api.h>
#endif

namespace polychip::gpu {
namespace {

TEST(DriverError, NamesCodesPerApi) {
  EXPECT_EQ(driver_error_name(Api::kCuda, 100), "CUDA_ERROR_NO_DEVICE");
  EXPECT_EQ(driver_error_name(Api::kHip, 100), "hipErrorNoDevice");
  EXPECT_EQ(driver_error_name(Api::kCuda, 34), "CUDA_ERROR_STUB_LIBRARY");
  // A code HIP does not have is not given a made-up name.
  EXPECT_EQ(driver_error_name(Api::kHip, 34), "unknown error 34");
  EXPECT_EQ(driver_error_name(Api::kCuda, 12345), "unknown error 12345");
}

TEST(DriverError, MapsToPolychipStatuses) {
  EXPECT_EQ(driver_error_status(0), POLYCHIP_OK);
  EXPECT_EQ(driver_error_status(2), POLYCHIP_OUT_OF_MEMORY);
  EXPECT_EQ(driver_error_status(100), POLYCHIP_UNAVAILABLE);
  EXPECT_EQ(driver_error_status(35), POLYCHIP_UNAVAILABLE);
  EXPECT_EQ(driver_error_status(1), POLYCHIP_INVALID_ARGUMENT);
  EXPECT_EQ(driver_error_status(500), POLYCHIP_NOT_FOUND);
  EXPECT_EQ(driver_error_status(209), POLYCHIP_UNSUPPORTED);
  EXPECT_EQ(driver_error_status(214), POLYCHIP_DATA_CORRUPTION);
  EXPECT_EQ(driver_error_status(700), POLYCHIP_ABORTED);
  EXPECT_EQ(driver_error_status(702), POLYCHIP_DEADLINE_EXCEEDED);
  EXPECT_EQ(driver_error_status(424242), POLYCHIP_INTERNAL);
}

TEST(DriverError, DescribesTheCall) {
  EXPECT_EQ(describe_driver_call(Api::kCuda, "cuInit", 100),
            "cuInit returned CUDA_ERROR_NO_DEVICE (100)");
  EXPECT_EQ(describe_driver_call(Api::kHip, "hipInit", 3),
            "hipInit returned hipErrorNotInitialized (3)");
}

#ifdef POLYCHIP_HAVE_CUDA_HEADERS
TEST(DriverError, TableMatchesCudaHeader) {
#define PC_CHECK(name) EXPECT_EQ(driver_error_name(Api::kCuda, name), #name)
  PC_CHECK(CUDA_SUCCESS);
  PC_CHECK(CUDA_ERROR_INVALID_VALUE);
  PC_CHECK(CUDA_ERROR_OUT_OF_MEMORY);
  PC_CHECK(CUDA_ERROR_NOT_INITIALIZED);
  PC_CHECK(CUDA_ERROR_DEINITIALIZED);
  PC_CHECK(CUDA_ERROR_STUB_LIBRARY);
  PC_CHECK(CUDA_ERROR_DEVICE_UNAVAILABLE);
  PC_CHECK(CUDA_ERROR_NO_DEVICE);
  PC_CHECK(CUDA_ERROR_INVALID_DEVICE);
  PC_CHECK(CUDA_ERROR_INVALID_IMAGE);
  PC_CHECK(CUDA_ERROR_INVALID_CONTEXT);
  PC_CHECK(CUDA_ERROR_NO_BINARY_FOR_GPU);
  PC_CHECK(CUDA_ERROR_ECC_UNCORRECTABLE);
  PC_CHECK(CUDA_ERROR_INVALID_PTX);
  PC_CHECK(CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  PC_CHECK(CUDA_ERROR_FILE_NOT_FOUND);
  PC_CHECK(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED);
  PC_CHECK(CUDA_ERROR_OPERATING_SYSTEM);
  PC_CHECK(CUDA_ERROR_INVALID_HANDLE);
  PC_CHECK(CUDA_ERROR_NOT_FOUND);
  PC_CHECK(CUDA_ERROR_NOT_READY);
  PC_CHECK(CUDA_ERROR_ILLEGAL_ADDRESS);
  PC_CHECK(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  PC_CHECK(CUDA_ERROR_LAUNCH_TIMEOUT);
  PC_CHECK(CUDA_ERROR_CONTEXT_IS_DESTROYED);
  PC_CHECK(CUDA_ERROR_ASSERT);
  PC_CHECK(CUDA_ERROR_HARDWARE_STACK_ERROR);
  PC_CHECK(CUDA_ERROR_ILLEGAL_INSTRUCTION);
  PC_CHECK(CUDA_ERROR_MISALIGNED_ADDRESS);
  PC_CHECK(CUDA_ERROR_LAUNCH_FAILED);
  PC_CHECK(CUDA_ERROR_NOT_SUPPORTED);
  PC_CHECK(CUDA_ERROR_SYSTEM_NOT_READY);
  PC_CHECK(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
  PC_CHECK(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE);
  PC_CHECK(CUDA_ERROR_UNKNOWN);
#undef PC_CHECK
  EXPECT_EQ(kDriverNotReady, CUDA_ERROR_NOT_READY);
}
#endif

#ifdef POLYCHIP_HAVE_HIP_HEADERS
TEST(DriverError, TableMatchesHipHeader) {
#define PC_CHECK(name) EXPECT_EQ(driver_error_name(Api::kHip, name), #name)
  PC_CHECK(hipSuccess);
  PC_CHECK(hipErrorInvalidValue);
  PC_CHECK(hipErrorOutOfMemory);
  PC_CHECK(hipErrorNotInitialized);
  PC_CHECK(hipErrorDeinitialized);
  PC_CHECK(hipErrorInvalidConfiguration);
  PC_CHECK(hipErrorInsufficientDriver);
  PC_CHECK(hipErrorInvalidDeviceFunction);
  PC_CHECK(hipErrorNoDevice);
  PC_CHECK(hipErrorInvalidDevice);
  PC_CHECK(hipErrorInvalidImage);
  PC_CHECK(hipErrorInvalidContext);
  PC_CHECK(hipErrorNoBinaryForGpu);
  PC_CHECK(hipErrorECCNotCorrectable);
  PC_CHECK(hipErrorInvalidKernelFile);
  PC_CHECK(hipErrorFileNotFound);
  PC_CHECK(hipErrorSharedObjectInitFailed);
  PC_CHECK(hipErrorOperatingSystem);
  PC_CHECK(hipErrorInvalidHandle);
  PC_CHECK(hipErrorNotFound);
  PC_CHECK(hipErrorNotReady);
  PC_CHECK(hipErrorIllegalAddress);
  PC_CHECK(hipErrorLaunchOutOfResources);
  PC_CHECK(hipErrorLaunchTimeOut);
  PC_CHECK(hipErrorContextIsDestroyed);
  PC_CHECK(hipErrorAssert);
  PC_CHECK(hipErrorLaunchFailure);
  PC_CHECK(hipErrorNotSupported);
  PC_CHECK(hipErrorUnknown);
#undef PC_CHECK
  EXPECT_EQ(kDriverNotReady, hipErrorNotReady);
}
#endif

}  // namespace
}  // namespace polychip::gpu
