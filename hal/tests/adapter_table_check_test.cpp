// ABI version negotiation: older/newer minor accepted, other majors refused,
// too-small and malformed tables refused with the reason.
#include <gtest/gtest.h>

#include "../src/adapter_table_check.hpp"

namespace polychip {
namespace {

polychip_adapter_api valid_table() {
  // Any complete table will do; borrow the function pointers of a fake.
  static auto fn = +[](polychip_device_count_args*) -> polychip_status { return 0; };
  polychip_adapter_api t{};
  t.struct_size = POLYCHIP_ADAPTER_API_STRUCT_SIZE_V1_0;
  t.abi_version = {sizeof(polychip_abi_version), 1, 0};
  t.name = "fake";
  t.vendor = "v";
  t.adapter_version = "1";
  void** slots = reinterpret_cast<void**>(&t.last_error_message);
  void** end = reinterpret_cast<void**>(&t.kernel_table) + 1;
  for (void** s = slots; s != end; ++s) *s = reinterpret_cast<void*>(fn);
  return t;
}

TEST(AdapterTableCheckTest, SameVersionIsAccepted) {
  auto t = valid_table();
  EXPECT_EQ(check_adapter_table(&t, 1, 0), "");
}

TEST(AdapterTableCheckTest, OlderMinorIsAccepted) {
  auto t = valid_table();  // built against 1.0
  EXPECT_EQ(check_adapter_table(&t, 1, 3), "");
}

TEST(AdapterTableCheckTest, NewerMinorIsAccepted) {
  auto t = valid_table();
  t.abi_version.minor = 9;
  EXPECT_EQ(check_adapter_table(&t, 1, 0), "");
}

TEST(AdapterTableCheckTest, NewerMajorIsRefusedNamingBothVersions) {
  auto t = valid_table();
  t.abi_version = {sizeof(polychip_abi_version), 2, 1};
  std::string why = check_adapter_table(&t, 1, 0);
  EXPECT_NE(why.find("ABI version 2.1"), std::string::npos) << why;
  EXPECT_NE(why.find("HAL's ABI 1.0"), std::string::npos) << why;
}

TEST(AdapterTableCheckTest, OlderMajorIsRefused) {
  auto t = valid_table();
  EXPECT_NE(check_adapter_table(&t, 2, 0).find("major versions differ"), std::string::npos);
}

TEST(AdapterTableCheckTest, TooSmallStructIsRefused) {
  auto t = valid_table();
  t.struct_size = offsetof(polychip_adapter_api, kernel_table);
  EXPECT_NE(check_adapter_table(&t).find("smaller than"), std::string::npos);
}

TEST(AdapterTableCheckTest, NullFunctionIsRefusedByName) {
  auto t = valid_table();
  t.event_query = nullptr;
  EXPECT_EQ(check_adapter_table(&t), "malformed table: function 'event_query' is NULL");
}

TEST(AdapterTableCheckTest, NullTableAndMissingNameAreRefused) {
  EXPECT_EQ(check_adapter_table(nullptr), "the entry function returned NULL");
  auto t = valid_table();
  t.name = "";
  EXPECT_NE(check_adapter_table(&t).find("no name"), std::string::npos);
  t.name = nullptr;
  EXPECT_NE(check_adapter_table(&t).find("no name"), std::string::npos);
}

TEST(AdapterTableCheckTest, EitherNullVendorOrNullVersionIsRefused) {
  for (bool vendor_null : {true, false}) {
    auto t = valid_table();
    (vendor_null ? t.vendor : t.adapter_version) = nullptr;
    EXPECT_EQ(check_adapter_table(&t), "malformed table: vendor or version is NULL");
  }
}

TEST(AdapterTableCheckTest, PatchTablesAreNegotiatedTheSameWay) {
  polychip_patch_api p{};
  p.struct_size = POLYCHIP_PATCH_API_STRUCT_SIZE_V1_0;
  p.abi_version = {sizeof(polychip_abi_version), 1, 0};
  p.patch_name = "x";
  EXPECT_EQ(check_patch_table(&p), "");
  p.num_patches = 2;  // but no array
  EXPECT_NE(check_patch_table(&p).find("malformed"), std::string::npos);
  p.num_patches = 0;
  p.abi_version.major = 3;
  EXPECT_NE(check_patch_table(&p).find("ABI version 3.0"), std::string::npos);
}

TEST(AdapterTableCheckTest, PatchTablesWithoutANameOrWithBadCountsAreRefused) {
  polychip_patch_api good{};
  good.struct_size = POLYCHIP_PATCH_API_STRUCT_SIZE_V1_0;
  good.abi_version = {sizeof(polychip_abi_version), 1, 0};
  good.patch_name = "x";
  for (const char* name : {static_cast<const char*>(nullptr), ""}) {
    auto p = good;
    p.patch_name = name;
    EXPECT_EQ(check_patch_table(&p), "malformed patch table: no patch_name");
  }
  const std::string bad_counts = "malformed patch table: entry arrays do not match their counts";
  auto p = good;
  p.num_hooks = 1;  // no hooks array
  EXPECT_EQ(check_patch_table(&p), bad_counts);
  p = good;
  p.num_patches = -1;
  EXPECT_EQ(check_patch_table(&p), bad_counts);
  p = good;
  p.num_hooks = -1;
  EXPECT_EQ(check_patch_table(&p), bad_counts);
}

}  // namespace
}  // namespace polychip
