// Without a Level Zero driver (ZE_ENABLE_NULL_DRIVER=0, no GPU here): the
// adapter loads, reports zero devices and why, and refuses device calls.
#include <gtest/gtest.h>

#include <string>

#include "level_zero_adapter.hpp"

namespace {

TEST(LevelZeroWithoutDriver, ReportsZeroDevicesAndTheReason) {
  const polychip_adapter_api* api = polychip_level_zero_adapter_get_api();
  ASSERT_NE(api, nullptr);
  EXPECT_STREQ(api->name, "level_zero");
  polychip_device_count_args c{};
  c.struct_size = sizeof c;
  ASSERT_EQ(api->device_count(&c), POLYCHIP_OK);
  if (c.count > 0) GTEST_SKIP() << "this machine has a Level Zero device";
  ASSERT_NE(c.unavailable_reason, nullptr);
  std::string reason = c.unavailable_reason;
  EXPECT_TRUE(reason.find("no Level Zero driver") != std::string::npos ||
              reason.find("no Level Zero loader") != std::string::npos)
      << reason;
  polychip_memory_allocate_args m{};
  m.struct_size = sizeof m;
  m.size_bytes = 16;
  EXPECT_EQ(api->memory_allocate(&m), POLYCHIP_NOT_FOUND);
}

}  // namespace
