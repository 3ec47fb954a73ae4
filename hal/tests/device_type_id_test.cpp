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
  // Every character of the class, its ends included.
  EXPECT_EQ(device_type_id_problem("abcdefghijklmnopqrstuvwxyz.0123456789_-"), "");
}

TEST(DeviceTypeIdTest, EveryOtherCharacterIsRefusedAndOnlyUpperCaseIsCalledSo) {
  const std::string allowed = "abcdefghijklmnopqrstuvwxyz0123456789_-.";
  for (int c = 1; c < 256; ++c) {
    if (allowed.find(static_cast<char>(c)) != std::string::npos) continue;
    const std::string problem = device_type_id_problem(std::string("v.m") + static_cast<char>(c));
    EXPECT_NE(problem.find("outside [a-z0-9_-]"), std::string::npos) << c;
    EXPECT_EQ(problem.find("lower case") != std::string::npos, c >= 'A' && c <= 'Z') << c;
  }
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
