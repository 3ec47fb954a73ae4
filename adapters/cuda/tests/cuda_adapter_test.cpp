// The cuda adapter on this machine (no GPU, no libcuda.so.1): it loads,
// lists zero devices with the reason, never crashes, and carries every
// kernel the host side may launch.
#include "cuda_adapter.hpp"

#include <unistd.h>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "cuda_driver.hpp"
#include "gpu_common/kernel_catalog.hpp"
#include "polychip/runtime.hpp"

namespace polychip {
namespace {

TEST(CudaAdapter, RuntimeListsItWithZeroDevicesAndAReason) {
  RuntimeOptions options;
  options.builtin_adapters = builtin_adapter_entries();
  Runtime runtime(options);
  const AdapterInfo* cuda = nullptr;
  for (const auto& a : runtime.adapters())
    if (a.name == "cuda") cuda = &a;
  ASSERT_NE(cuda, nullptr) << "the cuda adapter is not built in";
  EXPECT_EQ(cuda->vendor, "NVIDIA");
  if (cuda->device_count > 0) GTEST_SKIP() << "this machine has an NVIDIA GPU";
  EXPECT_FALSE(cuda->unavailable_reason.empty());
  const std::string& r = cuda->unavailable_reason;
  EXPECT_TRUE(r.find("libcuda.so.1 not found") != std::string::npos ||
              r.find("no CUDA driver") != std::string::npos ||
              r.find("built without CUDA kernels") != std::string::npos)
      << r;
}

TEST(CudaAdapter, DeviceCallsFailCleanlyWithoutADevice) {
  const polychip_adapter_api* api = polychip_cuda_adapter_get_api();
  polychip_device_count_args c{};
  c.struct_size = sizeof c;
  ASSERT_EQ(api->device_count(&c), POLYCHIP_OK);
  if (c.count > 0) GTEST_SKIP() << "this machine has an NVIDIA GPU";
  polychip_memory_allocate_args m{};
  m.struct_size = sizeof m;
  m.size_bytes = 1024;
  EXPECT_EQ(api->memory_allocate(&m), POLYCHIP_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api->last_error_message()).find("device 0 does not exist"),
            std::string::npos);
  polychip_kernel_table_args k{};
  k.struct_size = sizeof k;
  EXPECT_EQ(api->kernel_table(&k), POLYCHIP_INVALID_ARGUMENT);
}

TEST(CudaDriver, MissingLibraryIsAReasonNotACrash) {
  auto driver = cuda::make_cuda_driver({"libpolychip-no-such-cuda.so.1"});
  const std::string reason = driver->load();
  EXPECT_NE(reason.find("libpolychip-no-such-cuda.so.1 not found"), std::string::npos) << reason;
}

#ifdef POLYCHIP_CUDA_STUB_LIBRARY
TEST(CudaDriver, StubLibraryFailsInCuInitWithItsName) {
  if (access(POLYCHIP_CUDA_STUB_LIBRARY, R_OK) != 0)
    GTEST_SKIP() << "no stub " << POLYCHIP_CUDA_STUB_LIBRARY;
  auto driver = cuda::make_cuda_driver({POLYCHIP_CUDA_STUB_LIBRARY});
  const std::string reason = driver->load();
  // The toolkit's stub exports every symbol but refuses to initialize.
  EXPECT_EQ(reason, "no CUDA driver: cuInit returned CUDA_ERROR_STUB_LIBRARY (34)");
}
#endif

TEST(CudaKernelImage, HoldsEveryKernelTheHostLaunches) {
#ifndef POLYCHIP_CUDA_KERNELS_BUILT
  EXPECT_TRUE(gpu::polychip_cuda_kernel_image().empty());
  GTEST_SKIP() << "built with POLYCHIP_BUILD_CUDA=OFF";
#else
  auto image = gpu::polychip_cuda_kernel_image();
  ASSERT_GT(image.size(), 1000u);
  EXPECT_EQ(gpu::missing_kernel_symbols(image), std::vector<std::string>{})
      << "kernels missing from the fatbin";
#endif
}

}  // namespace
}  // namespace polychip
