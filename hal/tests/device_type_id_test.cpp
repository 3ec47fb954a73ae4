// The device-type id rule of the adapter guide, at its edges.
#include <gtest/gtest.h>

#include <string>

#include "../src/device_type_id.hpp"

namespace polychip {
namespace {

TEST(DeviceTypeIdTest, IdsFollowingTheRuleAreAccepted) {
  for (const char* id : {"nvidia.h100", "nvidia.a100-sxm4-80gb", "amd.instinct-mi250x", "cpu.host",
                         "sim.naive_softmax", "opencl.pocl-cpu", "a.b"})
    EXPECT_EQ(device_type_id_problem(id), "") << id;
  EXPECT_EQ(device_type_id_problem("v." + std::string(61, 'm')), "");  // 63 characters
}

TEST(DeviceTypeIdTest, IdsBreakingTheRuleSayWhat) {
  EXPECT_NE(device_type_id_problem("MyChip.X1").find("'M'"), std::string::npos);
  EXPECT_NE(device_type_id_problem("MyChip.X1").find("lower case"), std::string::npos);
  EXPECT_NE(device_type_id_problem("vendor.model x").find("' '"), std::string::npos);
  for (const char* id : {"", "nodot", ".model", "vendor.", "a.b.c"})
    EXPECT_NE(device_type_id_problem(id).find("not 'vendor.model'"), std::string::npos) << id;
  EXPECT_NE(device_type_id_problem("v." + std::string(62, 'm')).find("more than 63"),
            std::string::npos);
}

}  // namespace
}  // namespace polychip
