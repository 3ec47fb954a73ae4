// The hip adapter on this machine: Debian's libamdhip64.so.5 is installed
// but there is no AMD GPU, so the real runtime is loaded and refuses; the
// adapter must report zero devices with the runtime's own words.
#include "hip_adapter.hpp"

#include <dlfcn.h>
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "gpu_common/kernel_catalog.hpp"
#include "hip_driver.hpp"
#include "polychip/runtime.hpp"

namespace polychip {
namespace {

TEST(HipAdapter, RuntimeListsItWithZeroDevicesAndAReason) {
  RuntimeOptions options;
  options.builtin_adapters = builtin_adapter_entries();
  Runtime runtime(options);
  const AdapterInfo* hip = nullptr;
  for (const auto& a : runtime.adapters())
    if (a.name == "hip") hip = &a;
  ASSERT_NE(hip, nullptr) << "the hip adapter is not built in";
  EXPECT_EQ(hip->vendor, "AMD");
  if (hip->device_count > 0) GTEST_SKIP() << "this machine has an AMD GPU";
  EXPECT_FALSE(hip->unavailable_reason.empty());
}

TEST(HipDriver, RealRuntimeWithoutAGpuExplainsItself) {
  void* probe = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_LOCAL);
  if (!probe) GTEST_SKIP() << "libamdhip64.so.5 is not installed";
  auto driver = hip::make_hip_driver();
  const std::string reason = driver->load();
  if (reason.empty()) {
    int count = -1;
    const int rc = driver->device_count(&count);
    if (rc == 0 && count > 0) GTEST_SKIP() << "this machine has an AMD GPU";
    EXPECT_TRUE(rc != 0 || count == 0);
  } else {
    // e.g. "no HIP driver: hipInit returned hipErrorInvalidDevice (101)"
    EXPECT_EQ(reason.rfind("no HIP driver: hipInit returned hip", 0), 0u) << reason;
  }
}

TEST(HipDriver, MissingLibraryIsAReasonNotACrash) {
  auto driver = hip::make_hip_driver({"libpolychip-no-such-hip.so.5"});
  EXPECT_NE(driver->load().find("libpolychip-no-such-hip.so.5 not found"), std::string::npos);
}

TEST(HipAdapter, DeviceCallsFailCleanlyWithoutADevice) {
  const polychip_adapter_api* api = polychip_hip_adapter_get_api();
  polychip_device_count_args c{};
  c.struct_size = sizeof c;
  ASSERT_EQ(api->device_count(&c), POLYCHIP_OK);
  if (c.count > 0) GTEST_SKIP() << "this machine has an AMD GPU";
  ASSERT_NE(c.unavailable_reason, nullptr);
  polychip_stream_create_args s{};
  s.struct_size = sizeof s;
  EXPECT_EQ(api->stream_create(&s), POLYCHIP_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api->last_error_message()).find(c.unavailable_reason), std::string::npos);
}

TEST(HipKernelImage, HoldsEveryKernelTheHostLaunches) {
#ifndef POLYCHIP_HIP_KERNELS_BUILT
  EXPECT_TRUE(gpu::polychip_hip_kernel_image().empty());
  GTEST_SKIP() << "built with POLYCHIP_BUILD_HIP=OFF";
#else
  auto image = gpu::polychip_hip_kernel_image();
  ASSERT_GT(image.size(), 1000u);
  const std::string bundle_magic = "__CLANG_OFFLOAD_BUNDLE__";
  EXPECT_TRUE(std::equal(bundle_magic.begin(), bundle_magic.end(), image.begin()))
      << "hipcc --genco output is an offload bundle hipModuleLoadData accepts";
  EXPECT_EQ(gpu::missing_kernel_symbols(image), std::vector<std::string>{})
      << "kernels missing from the code object";
#endif
}

}  // namespace
}  // namespace polychip
