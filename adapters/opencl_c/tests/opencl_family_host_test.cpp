// The host library the opencl and level_zero adapters share.
#include <gtest/gtest.h>

#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "host/abi_checks.hpp"
#include "host/device_queries.hpp"
#include "host/device_type_id.hpp"
#include "host/error_channel.hpp"
#include "host/kernel_table.hpp"

namespace polychip::opencl_family {
namespace {

TEST(DeviceTypeId, SanitizedPartsAndJoinedId) {
  EXPECT_EQ(sanitize_id_part("--A..b__C--"), "a..b__c");
  EXPECT_EQ(sanitize_id_part("Intel(R) Arc"), "intel-r-arc");
  EXPECT_EQ(join_device_type_id("opencl", "pocl-cpu", 63), "opencl.pocl-cpu");
  // Cut at the limit, and never ending in '-'.
  EXPECT_EQ(join_device_type_id("intel", "ab-cd", 9), "intel.ab");
}

TEST(ErrorChannel, MessagesNameTheAdapterAndTheCall) {
  ErrorChannel errors("demo");
  EXPECT_EQ(errors.guarded("copy", [] {}), POLYCHIP_OK);
  EXPECT_EQ(errors.guarded("copy", [] { fail(POLYCHIP_INVALID_ARGUMENT, "bad size"); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(), "demo copy: bad size");
  EXPECT_EQ(errors.guarded("memory_allocate", [] { throw std::bad_alloc(); }),
            POLYCHIP_OUT_OF_MEMORY);
  EXPECT_STREQ(errors.last_message(), "demo memory_allocate: out of host memory");
  EXPECT_EQ(errors.guarded("copy", [] { throw std::runtime_error("boom"); }), POLYCHIP_INTERNAL);
  EXPECT_STREQ(errors.last_message(), "demo copy: boom");
}

TEST(ErrorChannel, KernelEntriesReportBadAllocAsInternal) {
  ErrorChannel errors("demo");
  EXPECT_EQ(errors.guarded_kernel("gemm", [] { throw std::bad_alloc(); }), POLYCHIP_INTERNAL);
  EXPECT_EQ(std::string(errors.last_message()).rfind("demo gemm: ", 0), 0u)
      << errors.last_message();
}

TEST(AbiChecks, NullArgsHandlesAndDeviceIndex) {
  ErrorChannel errors("demo");
  polychip_stream_args* none = nullptr;
  EXPECT_EQ(errors.guarded("stream_destroy", [&] { require_args(none); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(), "demo stream_destroy: 'args' is null");
  polychip_stream_args args{};
  EXPECT_EQ(errors.guarded("stream_destroy", [&] { require_args(&args); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(), "demo stream_destroy: 'args' has struct_size 0");
  EXPECT_EQ(errors.guarded("event_record", [&] { require_handle(args.stream, "stream"); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(), "demo event_record: 'stream' is null");
  std::vector<std::unique_ptr<int>> devices;
  devices.push_back(std::make_unique<int>(7));
  EXPECT_EQ(device_at(devices, 0, "demo"), 7);
  EXPECT_EQ(errors.guarded("stream_create", [&] { device_at(devices, 1, "demo"); }),
            POLYCHIP_NOT_FOUND);
  EXPECT_STREQ(errors.last_message(),
               "demo stream_create: device index 1 is out of range: the demo adapter has 1 "
               "device(s)");
}

TEST(DeviceQueries, CountWithReasonAndPropertiesUpToTheCallersSize) {
  const std::string reason = "no driver";
  polychip_device_count_args count{};
  answer_device_count(0, reason, &count);
  EXPECT_EQ(count.count, 0);
  EXPECT_STREQ(count.unavailable_reason, "no driver");
  answer_device_count(2, reason, &count);
  EXPECT_EQ(count.count, 2);
  EXPECT_EQ(count.unavailable_reason, nullptr);

  polychip_device_properties mine{};
  mine.struct_size = sizeof mine;
  mine.memory_bytes = 1234;
  mine.compute_units = 7;
  polychip_device_properties older{};
  older.struct_size = POLYCHIP_STRUCT_SIZE(polychip_device_properties, memory_bytes);
  copy_device_properties(mine, &older);
  EXPECT_EQ(older.struct_size, POLYCHIP_STRUCT_SIZE(polychip_device_properties, memory_bytes));
  EXPECT_EQ(older.memory_bytes, 1234u);
  EXPECT_EQ(older.compute_units, 0);  // past the caller's struct_size: untouched

  ErrorChannel errors("demo");
  EXPECT_EQ(errors.guarded("device_properties", [&] { copy_device_properties(mine, nullptr); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(), "demo device_properties: 'properties' is null");
}

polychip_status no_kernel(const polychip_kernel_args*) { return POLYCHIP_OK; }

TEST(KernelTable, ListsLaunchedOpsAndF64AndCastOnlyWithFp64) {
  const int without_fp64 = 0, with_fp64 = 0;
  auto all = [](std::string_view) { return true; };
  const auto& plain = contract_kernel_table(&without_fp64, false, all, no_kernel);
  const auto& full = contract_kernel_table(&with_fp64, true, all, no_kernel);
  EXPECT_GT(full.size(), plain.size());
  for (const auto& e : plain) {
    EXPECT_NE(std::string_view(e.op), "cast");
    for (int k = 0; k < e.num_dtypes; ++k) EXPECT_NE(e.signature[k], POLYCHIP_DTYPE_F64) << e.op;
    EXPECT_EQ(e.fn, no_kernel);
  }
  bool has_cast = false;
  for (const auto& e : full) has_cast |= std::string_view(e.op) == "cast" && e.num_dtypes == 0;
  EXPECT_TRUE(has_cast);
  // Kept per device: the same table (the ABI hands out pointers into it).
  EXPECT_EQ(&contract_kernel_table(&without_fp64, false, all, no_kernel), &plain);
}

TEST(KernelTable, OnlyOpsWithALauncher) {
  const int device = 0;
  auto gemm_only = [](std::string_view op) { return op == "gemm"; };
  const auto& table = contract_kernel_table(&device, true, gemm_only, no_kernel);
  ASSERT_FALSE(table.empty());
  for (const auto& e : table) EXPECT_EQ(std::string_view(e.op), "gemm");
}

}  // namespace
}  // namespace polychip::opencl_family
