#include "gpu_common/device_type.hpp"

#include <gtest/gtest.h>

#include "polychip/adapter_abi.h"

namespace polychip::gpu {
namespace {

TEST(DeviceTypeId, DropsTheRepeatedVendorAndLowerCases) {
  EXPECT_EQ(device_type_id("nvidia", "NVIDIA H100"), "nvidia.h100");
  EXPECT_EQ(device_type_id("nvidia", "NVIDIA A100-SXM4-80GB"), "nvidia.a100-sxm4-80gb");
  EXPECT_EQ(device_type_id("nvidia", "NVIDIA H100 80GB HBM3"), "nvidia.h100-80gb-hbm3");
  EXPECT_EQ(device_type_id("amd", "AMD Instinct MI250X"), "amd.instinct-mi250x");
}

TEST(DeviceTypeId, KeepsNamesWithoutTheVendorWord) {
  EXPECT_EQ(device_type_id("nvidia", "Tesla V100-SXM2-16GB"), "nvidia.tesla-v100-sxm2-16gb");
  EXPECT_EQ(device_type_id("amd", "gfx90a:sramecc+:xnack-"), "amd.gfx90a-sramecc-xnack");
  // "nvidiax" is a model, not the vendor word.
  EXPECT_EQ(device_type_id("nvidia", "NVIDIAX 1"), "nvidia.nvidiax-1");
}

TEST(DeviceTypeId, CollapsesPunctuationAndTrims) {
  EXPECT_EQ(device_type_id("nvidia", "  NVIDIA  GeForce RTX 4090 (rev. 2) "),
            "nvidia.geforce-rtx-4090-rev-2");
}

TEST(DeviceTypeId, EmptyOrVendorOnlyNamesAreUnknown) {
  EXPECT_EQ(device_type_id("amd", ""), "amd.unknown");
  EXPECT_EQ(device_type_id("amd", "AMD"), "amd.unknown");
  EXPECT_EQ(device_type_id("amd", "---"), "amd.unknown");
}

TEST(DeviceTypeId, FitsTheAbiField) {
  const std::string id = device_type_id("nvidia", std::string(200, 'x') + " " + "y");
  EXPECT_EQ(id.size(), static_cast<size_t>(POLYCHIP_DEVICE_TYPE_MAX - 1));
  EXPECT_EQ(id.rfind("nvidia.", 0), 0u);
  // Truncation never leaves a trailing dash.
  const std::string dashed = device_type_id("nvidia", std::string(55, 'a') + " b");
  EXPECT_NE(dashed.back(), '-');
}

}  // namespace
}  // namespace polychip::gpu
