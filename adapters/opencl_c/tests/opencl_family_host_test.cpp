// The host library the opencl and level_zero adapters share.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "host/abi_checks.hpp"
#include "host/contract_checks.hpp"
#include "host/copy_checks.hpp"
#include "host/device_queries.hpp"
#include "host/device_type_id.hpp"
#include "host/error_channel.hpp"
#include "host/event_checks.hpp"
#include "host/kernel_table.hpp"
#include "host/memory_checks.hpp"
#include "host/runtime_library.hpp"
#include "host/supported_dtypes.hpp"
#include "host/tensor_elements.hpp"
#include "host/unavailable_reason.hpp"

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

TEST(MemoryChecks, KindSizeAndHostVisibility) {
  ErrorChannel errors("demo");
  EXPECT_EQ(
      errors.guarded("memory_allocate", [] { check_allocation(POLYCHIP_MEMORY_DEVICE, 64, 64); }),
      POLYCHIP_OK);
  EXPECT_EQ(errors.guarded("memory_allocate", [] { check_allocation(7, 64, 64); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(), "demo memory_allocate: unknown memory kind 7");
  EXPECT_EQ(errors.guarded("memory_allocate",
                           [] { check_allocation(POLYCHIP_MEMORY_PINNED_HOST, 65, 64); }),
            POLYCHIP_OUT_OF_MEMORY);
  EXPECT_STREQ(errors.last_message(),
               "demo memory_allocate: 65 bytes exceed the device's largest allocation (64 bytes)");
  EXPECT_EQ(errors.guarded("memory_host_pointer",
                           [] { require_host_visible(POLYCHIP_MEMORY_PINNED_HOST, "demo"); }),
            POLYCHIP_OK);
  EXPECT_EQ(errors.guarded("memory_host_pointer",
                           [] { require_host_visible(POLYCHIP_MEMORY_DEVICE, "demo"); }),
            POLYCHIP_UNSUPPORTED);
  EXPECT_STREQ(errors.last_message(),
               "demo memory_host_pointer: demo device memory is not host visible; copy it with "
               "copy()");
}

struct DemoMemory {
  int32_t device;
  uint64_t size;
};

DemoMemory* as_demo_memory(polychip_memory* m) { return reinterpret_cast<DemoMemory*>(m); }
polychip_memory* handle(DemoMemory& m) { return reinterpret_cast<polychip_memory*>(&m); }

TEST(CopyChecks, EndsRangesAndOneDevice) {
  ErrorChannel errors("demo");
  DemoMemory a{0, 16}, b{1, 16};
  char host[16] = {};
  polychip_copy_args args{};
  args.struct_size = sizeof args;
  args.kind = POLYCHIP_COPY_HOST_TO_DEVICE;
  args.dst_memory = handle(a);
  args.src_host = host;
  args.dst_offset = 8;
  args.size_bytes = 8;
  CopyEnds<DemoMemory> ends = copy_ends<DemoMemory>(args, as_demo_memory);
  EXPECT_EQ(ends.dst_memory, &a);
  EXPECT_EQ(ends.src_memory, nullptr);
  EXPECT_EQ(ends.src_host, host);
  EXPECT_EQ(copy_device(ends, std::nullopt, "demo"), 0);
  EXPECT_EQ(errors.guarded("copy", [&] { copy_device(ends, 1, "demo"); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(),
               "demo copy: source, destination and stream must belong to the same demo device");

  args.size_bytes = 9;
  EXPECT_EQ(errors.guarded("copy", [&] { copy_ends<DemoMemory>(args, as_demo_memory); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(),
               "demo copy: destination range [8, 17) exceeds its memory of 16 bytes");
  args.src_host = nullptr;
  EXPECT_EQ(errors.guarded("copy", [&] { copy_ends<DemoMemory>(args, as_demo_memory); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(), "demo copy: 'src_host' is null");

  args.kind = POLYCHIP_COPY_DEVICE_TO_DEVICE;
  args.src_memory = handle(b);
  args.size_bytes = 4;
  ends = copy_ends<DemoMemory>(args, as_demo_memory);
  EXPECT_EQ(errors.guarded("copy", [&] { copy_device(ends, std::nullopt, "demo"); }),
            POLYCHIP_INVALID_ARGUMENT);
  args.dst_memory = nullptr;
  EXPECT_EQ(errors.guarded("copy", [&] { copy_ends<DemoMemory>(args, as_demo_memory); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(), "demo copy: 'dst_memory' is null");
  args.kind = 9;
  EXPECT_EQ(errors.guarded("copy", [&] { copy_ends<DemoMemory>(args, as_demo_memory); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(), "demo copy: unknown copy kind 9");
}

TEST(EventChecks, DevicesAndRecording) {
  ErrorChannel errors("demo");
  EXPECT_EQ(errors.guarded("event_record", [] { check_record_devices(0, 0); }), POLYCHIP_OK);
  EXPECT_EQ(errors.guarded("event_record", [] { check_record_devices(0, 1); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(),
               "demo event_record: event and stream belong to different devices");
  EXPECT_EQ(errors.guarded("event_elapsed", [] { check_elapsed_devices(1, 0); }),
            POLYCHIP_INVALID_ARGUMENT);
  EXPECT_STREQ(errors.last_message(),
               "demo event_elapsed: 'start' and 'end' belong to different devices");
  EXPECT_EQ(errors.guarded("event_elapsed", [] { require_recorded(false, "end"); }),
            POLYCHIP_FAILED_PRECONDITION);
  EXPECT_STREQ(errors.last_message(), "demo event_elapsed: event 'end' was never recorded");
}

TEST(ContractChecks, UnknownOpIsNotFound) {
  ErrorChannel errors("demo");
  EXPECT_EQ(&require_contract_op("gemm"), find_op("gemm"));
  EXPECT_EQ(errors.guarded_kernel("nope", [] { require_contract_op("nope"); }), POLYCHIP_NOT_FOUND);
  EXPECT_STREQ(errors.last_message(), "demo nope: 'nope' is not in the op contract");
}

TEST(RuntimeLibrary, AMissingLibrarySaysWhy) {
  std::string reason;
  EXPECT_EQ(open_runtime_library("libpolychip_no_such_runtime.so.1", "no demo runtime", &reason),
            nullptr);
  EXPECT_EQ(reason.rfind("no demo runtime (", 0), 0u) << reason;
  EXPECT_NE(reason.find("libpolychip_no_such_runtime.so.1"), std::string::npos) << reason;

  struct DemoApi {
    int version = 1;
  };
  LoadedApi<DemoApi> failed;
  failed.reason = "no demo runtime";
  std::string why;
  EXPECT_EQ(loaded_api(failed, &why), nullptr);
  EXPECT_EQ(why, "no demo runtime");
  EXPECT_EQ(loaded_api(failed, nullptr), nullptr);
  LoadedApi<DemoApi> loaded;
  loaded.ok = true;
  why.clear();
  EXPECT_EQ(loaded_api(loaded, &why), &loaded.api);
  EXPECT_EQ(why, "");
}

TEST(SupportedDtypes, F64AndF8OnlyWithFp64) {
  const uint64_t f64 = uint64_t{1} << POLYCHIP_DTYPE_F64;
  const uint64_t f8 = uint64_t{1} << POLYCHIP_DTYPE_F8E4M3;
  EXPECT_NE(supported_dtypes(false) & (uint64_t{1} << POLYCHIP_DTYPE_F32), 0u);
  EXPECT_EQ(supported_dtypes(false) & (f64 | f8), 0u);
  EXPECT_EQ(supported_dtypes(true) & (f64 | f8), f64 | f8);
}

TEST(TensorElements, ProductOfTheShape) {
  polychip_tensor t{};
  EXPECT_EQ(numel(t), 1);  // rank 0: a scalar
  t.rank = 3;
  t.shape[0] = 2;
  t.shape[1] = 3;
  t.shape[2] = 4;
  EXPECT_EQ(numel(t), 24);
  t.shape[1] = 0;
  EXPECT_EQ(numel(t), 0);
}

TEST(UnavailableReason, NoneFoundOrTheProblems) {
  EXPECT_EQ(no_device_reason("Demo", "Demo drivers have no devices", {}),
            "Demo drivers have no devices");
  EXPECT_EQ(no_device_reason("Demo", "Demo drivers have no devices", {"a failed", "b failed"}),
            "no usable Demo device: a failed; b failed");
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
