// Buffer, Stream, Event and Tensor on the cpu adapter, and their error paths.
#include <gtest/gtest.h>

#include <numeric>

#include <fmt/format.h>

#include "test_runtime.hpp"

namespace polychip {
namespace {

class MemoryTest : public ::testing::Test {
 protected:
  Runtime rt{testing::cpu_only_options()};
  Device cpu = rt.device("cpu:0");
};

TEST_F(MemoryTest, CopiesRoundTripThroughDeviceMemory) {
  std::vector<int32_t> in(1000), out(1000, -1);
  std::iota(in.begin(), in.end(), 7);
  Buffer b(cpu, in.size() * 4);
  Stream s(cpu);
  b.copy_from_host(in.data(), in.size() * 4, 0, &s);
  Buffer c(cpu, in.size() * 4);
  c.copy_from(b, 400, 0, 400, &s);  // D2D of the middle
  c.copy_from(b, 400, 400, 0, &s);
  c.copy_to_host(out.data(), 800, 0, &s);
  s.synchronize();
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(out[i], in[100 + i]);
    EXPECT_EQ(out[100 + i], in[i]);
  }
}

TEST_F(MemoryTest, OutOfRangeCopiesAreClearErrors) {
  Buffer b(cpu, 16);
  char host[32] = {};
  try {
    b.copy_from_host(host, 32);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("outside the buffer of 16 bytes"), std::string::npos);
  }
  EXPECT_THROW(b.copy_to_host(host, 8, 9), Error);
  EXPECT_THROW(b.copy_to_host(nullptr, 8), Error);
  EXPECT_NO_THROW(b.copy_to_host(nullptr, 0));
}

// The HAL checks ranges itself (the adapter may not): exactly the buffer is
// fine, one byte more is refused naming the call and the bytes.
TEST_F(MemoryTest, CopyRangesEndExactlyAtTheBuffer) {
  using testing::expect_error;
  Buffer b(cpu, 16), c(cpu, 16);
  char host[32] = {};
  EXPECT_NO_THROW(b.copy_from_host(host, 16));
  EXPECT_NO_THROW(b.copy_to_host(host, 8, 8));
  EXPECT_NO_THROW(b.copy_to_host(host, 0, 16));  // an empty copy at the end
  EXPECT_NO_THROW(c.copy_from(b, 16));
  expect_error(StatusCode::kInvalidArgument,
               "copy_to_host: bytes [9, 17) are outside the buffer of 16 bytes",
               [&] { b.copy_to_host(host, 8, 9); });
  expect_error(StatusCode::kInvalidArgument,
               "copy_from_host: bytes [17, 17) are outside the buffer of 16 bytes",
               [&] { b.copy_from_host(host, 0, 17); });
  // offset + size wraps around 2^64: still outside.
  expect_error(StatusCode::kInvalidArgument, "copy_to_host: bytes [8,",
               [&] { b.copy_to_host(host, ~uint64_t{0} - 3, 8); });
  Buffer small(cpu, 8);
  expect_error(StatusCode::kInvalidArgument,
               "copy_from (source): bytes [0, 16) are outside the buffer of 8 bytes",
               [&] { c.copy_from(small, 16); });
  expect_error(StatusCode::kInvalidArgument,
               "copy_from (destination): bytes [4, 20) are outside the buffer of 16 bytes",
               [&] { c.copy_from(b, 16, 0, 4); });
}

TEST_F(MemoryTest, PinnedHostAndHostPointer) {
  Buffer p(cpu, 64, MemoryKind::kPinnedHost);
  ASSERT_NE(p.host_pointer(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p.host_pointer()) % 64, 0u);
  Buffer zero(cpu, 0);
  EXPECT_EQ(zero.size(), 0u);
}

TEST_F(MemoryTest, CpuMemoryIsExportedToNicsAsSystemMemory) {
  EXPECT_TRUE(cpu.properties().has(POLYCHIP_CAP_NETWORK_EXPORT));
  Buffer b(cpu, 4096);
  const NetworkMemory m = b.network_export();
  EXPECT_EQ(m.interface, POLYCHIP_MEMORY_INTERFACE_SYSTEM);
  EXPECT_STREQ(memory_interface_name(m.interface), "system");
  EXPECT_EQ(m.address, b.host_pointer());
  EXPECT_EQ(m.size, 4096u);
  EXPECT_EQ(m.dmabuf_fd, -1);
}

// The cpu adapter's own table cut back to ABI 1.0 (its memory_export
// pointer left in place past struct_size, which the HAL must not read).
const polychip_adapter_api* cpu_table_of_abi_1_0() {
  static const polychip_adapter_api api = [] {
    polychip_adapter_api a = *polychip_cpu_adapter_get_api();
    a.struct_size = POLYCHIP_ADAPTER_API_STRUCT_SIZE_V1_0;
    a.abi_version.minor = 0;
    return a;
  }();
  return &api;
}

// The cpu adapter's table whose memory_export describes `g_export` instead,
// to check what the HAL accepts from an adapter.
polychip_memory_export_args g_export{};
const polychip_adapter_api* cpu_table_exporting_g_export() {
  static const polychip_adapter_api api = [] {
    polychip_adapter_api a = *polychip_cpu_adapter_get_api();
    a.memory_export = [](polychip_memory_export_args* args) -> polychip_status {
      const size_t struct_size = args->struct_size;
      *args = g_export;
      args->struct_size = struct_size;
      return POLYCHIP_OK;
    };
    return a;
  }();
  return &api;
}

class NetworkExportTest : public ::testing::Test {
 protected:
  RuntimeOptions options() {
    RuntimeOptions o;
    o.builtin_adapters = {&cpu_table_exporting_g_export};
    return o;
  }
  void SetUp() override {
    g_export = {};
    g_export.interface = POLYCHIP_MEMORY_INTERFACE_SYSTEM;
    g_export.address = &g_export;
    g_export.size_bytes = 64;
    g_export.dmabuf_fd = -1;
  }
  Runtime rt{options()};
  Buffer b{rt.device("cpu:0"), 64};
};

TEST_F(NetworkExportTest, ADescriptionOfTheWholeAllocationIsAccepted) {
  EXPECT_EQ(b.network_export().size, 64u);
  g_export.interface = POLYCHIP_MEMORY_INTERFACE_DMABUF;  // the last known interface
  g_export.address = nullptr;
  g_export.dmabuf_fd = 0;  // the lowest valid descriptor
  EXPECT_EQ(b.network_export().dmabuf_fd, 0);
  // Nothing to describe: a null address is fine.
  Buffer empty(rt.device("cpu:0"), 0);
  g_export.interface = POLYCHIP_MEMORY_INTERFACE_SYSTEM;
  g_export.size_bytes = 0;
  g_export.dmabuf_fd = -1;
  EXPECT_EQ(empty.network_export().address, nullptr);
}

TEST_F(NetworkExportTest, AnIncompleteOrUnknownDescriptionIsAnInternalError) {
  using testing::expect_error;
  g_export.size_bytes = 63;
  expect_error(StatusCode::kInternal, "memory_export described 63 bytes",
               [&] { b.network_export(); });
  g_export.size_bytes = 64;
  g_export.address = nullptr;
  expect_error(StatusCode::kInternal, "memory_export described 64 bytes at 0x0",
               [&] { b.network_export(); });
  g_export.interface = POLYCHIP_MEMORY_INTERFACE_DMABUF;  // without a file descriptor
  expect_error(StatusCode::kInternal, "(fd -1)", [&] { b.network_export(); });
  g_export.interface = static_cast<polychip_memory_interface>(POLYCHIP_MEMORY_INTERFACE_DMABUF + 1);
  expect_error(StatusCode::kInternal, "unknown memory interface", [&] { b.network_export(); });
}

TEST(NetworkExport, AnAdapterOfAbi1_0IsLoadedAndExportsNothing) {
  RuntimeOptions o;
  o.builtin_adapters = {&cpu_table_of_abi_1_0};
  Runtime rt(o);
  Buffer b(rt.device("cpu:0"), 64);
  try {
    b.network_export();
    FAIL() << "a 1.0 table has no memory_export";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(e.message().find("cannot export memory to a NIC: adapter 'cpu' has ABI 1.0"),
              std::string::npos)
        << e.message();
  }
}

TEST_F(MemoryTest, EventsRecordAndMeasure) {
  Stream s(cpu);
  Event a(cpu), b(cpu);
  EXPECT_THROW(Event::elapsed_ms(a, b), Error);  // never recorded
  a.record(s);
  b.record(s);
  b.wait_on(s);
  b.synchronize();
  EXPECT_TRUE(b.query());
  EXPECT_GE(Event::elapsed_ms(a, b), 0.0);
}

TEST_F(MemoryTest, MovedFromHandlesAreEmptyAndSafe) {
  Buffer a(cpu, 8);
  Buffer b = std::move(a);
  EXPECT_EQ(a.handle(), nullptr);
  EXPECT_NE(b.handle(), nullptr);
  Stream s(cpu);
  Stream t = std::move(s);
  EXPECT_THROW(s.synchronize(), Error);  // empty handle, clear error
  t.synchronize();
}

// A move assignment hands the handle over and leaves the source empty.
TEST_F(MemoryTest, MoveAssignmentTransfersTheHandle) {
  Buffer a(cpu, 8), b(cpu, 8);
  polychip_memory* memory = a.handle();
  b = std::move(a);
  EXPECT_EQ(b.handle(), memory);
  EXPECT_EQ(a.handle(), nullptr);
  Stream s(cpu), t(cpu);
  polychip_stream* stream = s.handle();
  t = std::move(s);
  EXPECT_EQ(t.handle(), stream);
  EXPECT_EQ(s.handle(), nullptr);
  Event e(cpu), f(cpu);
  polychip_event* event = e.handle();
  f = std::move(e);
  EXPECT_EQ(f.handle(), event);
  EXPECT_EQ(e.handle(), nullptr);
}

TEST_F(MemoryTest, TensorsRoundTripAndRejectBadShapes) {
  std::vector<float> v = {1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_host(cpu, DType::kF32, {2, 3}, v.data());
  EXPECT_EQ(t.to_vector<float>(), v);
  EXPECT_EQ(t.view().strides(), (Shape{3, 1}));
  EXPECT_TRUE(t.view().is_contiguous());
  EXPECT_THROW(Tensor(cpu, DType::kF32, {2, -1}), Error);
  EXPECT_THROW(TensorView(cpu, nullptr, DType::kF32, {2}, {1, 1}), Error);
  TensorView big(cpu, nullptr, DType::kF32, Shape(9, 1), Shape(9, 1));
  EXPECT_THROW(big.to_abi(), Error);
}

TEST_F(MemoryTest, UnknownDevicesAreClearErrors) {
  try {
    rt.device("cpu:3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kNotFound);
    EXPECT_NE(e.message().find("no device 3"), std::string::npos);
  }
  // The first index past the last device (the cpu adapter has one).
  testing::expect_error(StatusCode::kNotFound,
                        "adapter 'cpu' has 1 device(s); there is no device 1",
                        [&] { rt.device("cpu:1"); });
  // 4294967295 is -1 as a 32-bit int.
  for (const char* index : {"x", "", "-1", "-0", "+0", "1x", " 0", "0 ", "4294967295", "1e3"})
    testing::expect_error(StatusCode::kInvalidArgument,
                          fmt::format("device 'cpu:{0}': '{0}' is not a device index", index),
                          [&] { rt.device(std::string("cpu:") + index); });
  EXPECT_EQ(rt.device("cpu:0").label(), "cpu:0");
  try {
    rt.device("nvidia.h100");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("cpu:0 (cpu.host)"), std::string::npos) << e.message();
  }
  EXPECT_EQ(rt.device("cpu.host").label(), "cpu:0");
}

}  // namespace
}  // namespace polychip
