// Run with OCL_ICD_VENDORS pointing at an empty folder (see CMakeLists.txt):
// the ICD loader is there but finds no platform, so the adapter must load,
// report zero devices with the reason, and refuse device calls cleanly.
#include <gtest/gtest.h>

#include <string>

#include "opencl_adapter.hpp"

namespace {

TEST(OpenclWithoutPlatform, ReportsZeroDevicesAndTheReason) {
  const polychip_adapter_api* api = polychip_opencl_adapter_get_api();
  ASSERT_NE(api, nullptr);
  polychip_device_count_args c{};
  c.struct_size = sizeof c;
  ASSERT_EQ(api->device_count(&c), POLYCHIP_OK);
  EXPECT_EQ(c.count, 0);
  ASSERT_NE(c.unavailable_reason, nullptr);
  EXPECT_NE(std::string(c.unavailable_reason).find("no OpenCL platform"), std::string::npos)
      << c.unavailable_reason;
  polychip_stream_create_args s{};
  s.struct_size = sizeof s;
  EXPECT_EQ(api->stream_create(&s), POLYCHIP_NOT_FOUND);
  EXPECT_NE(std::string(api->last_error_message()).find("0 device"), std::string::npos)
      << api->last_error_message();
}

}  // namespace
