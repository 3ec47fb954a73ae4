#include "device_type_id.hpp"

#include <gtest/gtest.h>

namespace polychip::level_zero {
namespace {

TEST(DeviceTypeId, IntelVendorAndOthers) {
  EXPECT_EQ(device_type_id(0x8086, "Intel(R) Data Center GPU Max 1550", 63),
            "intel.intel-r-data-center-gpu-max-1550");
  EXPECT_EQ(device_type_id(0, "polychip null device", 63), "level_zero.polychip-null-device");
  EXPECT_EQ(device_type_id(0x1234, "", 63), "level_zero.device-1234");
  EXPECT_LE(device_type_id(0x8086, std::string(300, 'x'), 63).size(), 63u);
}

}  // namespace
}  // namespace polychip::level_zero
