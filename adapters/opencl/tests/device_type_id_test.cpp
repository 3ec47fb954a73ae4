#include "device_type_id.hpp"

#include <gtest/gtest.h>

namespace polychip::opencl {
namespace {

TEST(DeviceTypeId, PoclCpuDeviceIsNamedByKindNotHostProcessor) {
  EXPECT_EQ(device_type_id("Portable Computing Language",
                           "pthread-skylake-avx512-Intel(R) Xeon(R) Processor @ 2.50GHz", true, 63),
            "opencl.pocl-cpu");
}

TEST(DeviceTypeId, GpuDeviceNameIsSanitized) {
  EXPECT_EQ(device_type_id("NVIDIA CUDA", "NVIDIA A100-SXM4-80GB", false, 63),
            "opencl.nvidia-nvidia-a100-sxm4-80gb");
  EXPECT_EQ(device_type_id("Some Vendor (TM) Platform", "  X/Y  ", false, 63),
            "opencl.some-vendor-tm-platform-x-y");
}

TEST(DeviceTypeId, OnlyAllowedCharactersAndLengthLimit) {
  std::string id = device_type_id("ÄÖÜ Platform!!", std::string(200, 'Z'), false, 40);
  EXPECT_LE(id.size(), 40u);
  for (char c : id)
    EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                c == '_')
        << id;
  EXPECT_NE(id.back(), '-');
}

TEST(DeviceTypeId, EmptyNamesStillGiveAnId) {
  EXPECT_EQ(device_type_id("", "", false, 63), "opencl.unknown-device");
}

}  // namespace
}  // namespace polychip::opencl
