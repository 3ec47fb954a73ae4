// Sim device memory: unreadable from the host (a direct touch dies with
// SIGSEGV), readable and writable through copies and kernels; budgets,
// bounds and handle checks.
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "sim_memory.hpp"
#include "sim_profiles.hpp"
#include "sim_test_util.hpp"

namespace polychip::testing {
namespace {

using sim::SimMemory;

char* device_address(const Buffer& b) { return reinterpret_cast<SimMemory*>(b.handle())->base(); }

// The death-test child re-executes this binary: under AddressSanitizer, let
// it die of the SIGSEGV instead of ASan's report and exit code.
void let_children_die_of_segv() {
  const char* old = std::getenv("ASAN_OPTIONS");
  std::string options = old ? std::string(old) + ":handle_segv=0" : "handle_segv=0";
  setenv("ASAN_OPTIONS", options.c_str(), 1);
}

TEST_F(SimTest, HostCannotTouchDeviceMemoryDirectly) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  let_children_die_of_segv();
  OpRunner run = runner("sim.faithful");
  auto t = run.make(DType::kF32, {3}, {1, 2, 3});
  char* base = device_address(t.buffer());
  ASSERT_NE(base, nullptr);
  EXPECT_EXIT(
      {
        volatile float v = *reinterpret_cast<volatile float*>(base);
        std::_Exit(v == 1 ? 0 : 3);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
  EXPECT_EXIT(
      {
        *reinterpret_cast<volatile float*>(base + 4) = 7;
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
  // Through the API the data is there, kernels work on it, and it is locked
  // again afterwards.
  run.call("add", {t, t, t});
  EXPECT_TRUE(same_values(run.values(t), {2, 4, 6}));
  EXPECT_EXIT(
      {
        volatile float v = *reinterpret_cast<volatile float*>(base);
        std::_Exit(v == 2 ? 0 : 3);
      },
      ::testing::KilledBySignal(SIGSEGV), "");
  try {
    t.buffer().host_pointer();
    FAIL() << "device memory gave a host pointer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(e.message().find("not host visible"), std::string::npos) << e.message();
  }
}

TEST_F(SimTest, PinnedHostMemoryIsHostVisible) {
  const Device dev = rt.device("sim.faithful");
  Buffer pinned(dev, 64, MemoryKind::kPinnedHost);
  auto* p = static_cast<int32_t*>(pinned.host_pointer());
  ASSERT_NE(p, nullptr);
  p[3] = 42;
  Buffer device(dev, 64);
  device.copy_from(pinned, 64);
  int32_t out[16] = {};
  device.copy_to_host(out, 64);
  EXPECT_EQ(out[3], 42);
}

// memory_export (ABI 1.1): the allocation itself, as a NIC on this host
// registers it; what the NIC writes there is what the device holds.
TEST_F(SimTest, ExportedDeviceMemoryIsTheAllocationAndTheNicCanWriteIt) {
  const Device dev = rt.device("sim.faithful");
  EXPECT_TRUE(dev.properties().has(POLYCHIP_CAP_NETWORK_EXPORT));
  Buffer device(dev, 3 * 4096 + 8);
  const NetworkMemory m = device.network_export();
  EXPECT_EQ(m.interface, POLYCHIP_MEMORY_INTERFACE_SYSTEM);
  EXPECT_EQ(m.address, device_address(device));
  EXPECT_EQ(m.size, device.size());
  EXPECT_EQ(device.network_export().address, m.address) << "exporting twice is the same";
  std::vector<int32_t> written(device.size() / 4);
  std::iota(written.begin(), written.end(), 11);
  std::memcpy(m.address, written.data(), device.size());  // the NIC's DMA
  std::vector<int32_t> read(written.size());
  device.copy_to_host(read.data(), device.size());
  EXPECT_EQ(read, written);
  // Kernels and copies still lock and unlock its pages around themselves.
  Buffer other(dev, device.size());
  other.copy_from(device, device.size());
  other.copy_to_host(read.data(), device.size());
  EXPECT_EQ(read, written);
  EXPECT_EQ(*static_cast<int32_t*>(m.address), 11) << "still the NIC's to read after copies";
}

TEST_F(SimTest, CopiesRoundTripAndCheckBounds) {
  const Device dev = rt.device("sim.bf16acc");
  std::vector<uint8_t> in(10000), out(10000);
  std::iota(in.begin(), in.end(), 0);
  Buffer a(dev, in.size()), b(dev, in.size());
  a.copy_from_host(in.data(), in.size());
  b.copy_from(a, 5000, 0, 5000);
  b.copy_from(a, 5000, 5000, 0);
  b.copy_to_host(out.data(), out.size());
  for (size_t i = 0; i < 5000; ++i) {
    ASSERT_EQ(out[i], in[i + 5000]);
    ASSERT_EQ(out[i + 5000], in[i]);
  }
  // The adapter itself refuses out-of-range copies (not only the HAL).
  const polychip_adapter_api& api = dev.api();
  polychip_copy_args c{};
  c.struct_size = sizeof c;
  c.kind = POLYCHIP_COPY_DEVICE_TO_HOST;
  c.src_memory = a.handle();
  c.src_offset = 9000;
  c.dst_host = out.data();
  c.size_bytes = 1001;
  EXPECT_EQ(api.copy(&c), POLYCHIP_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api.last_error_message()).find("outside the memory of 10000 bytes"),
            std::string::npos);
  c.src_memory = reinterpret_cast<polychip_memory*>(out.data());  // not a handle
  c.src_offset = 0;
  c.size_bytes = 1;
  EXPECT_EQ(api.copy(&c), POLYCHIP_INVALID_ARGUMENT);
}

TEST_F(SimTest, DeviceMemoryBudgetIsEnforced) {
  const Device dev = rt.device("sim.ftz");
  const uint64_t budget = dev.properties().memory_bytes;
  EXPECT_EQ(budget, sim::sim_config().devices[2].memory_bytes);
  try {
    Buffer too_big(dev, budget + 1);
    FAIL() << "allocated more than the device has";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kOutOfMemory);
  }
  {
    Buffer half(dev, budget / 2);
    EXPECT_THROW(Buffer(dev, budget / 2 + 4096), Error);
  }
  EXPECT_NO_THROW(Buffer(dev, budget / 2 + 4096));  // freed memory is returned to the budget
  Buffer empty(dev, 0);
  EXPECT_EQ(empty.size(), 0u);
}

TEST_F(SimTest, ViewsOutsideTheirMemoryAreRefused) {
  OpRunner run = runner("sim.faithful");
  auto t = run.make(DType::kF32, {4}, {1, 2, 3, 4});
  TensorView past_end(run.device(), t.buffer().handle(), DType::kF32, {4}, {1}, 8);
  try {
    run.call("neg", {past_end, t});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << e.what();
  }
  // The same on the cpu adapter.
  auto c = cpu.make(DType::kF32, {4}, {1, 2, 3, 4});
  TensorView cpu_past_end(cpu.device(), c.buffer().handle(), DType::kF32, {4}, {2});
  EXPECT_THROW(cpu.call("neg", {cpu_past_end, c}), Error);
}

TEST(SimConfig, EnvironmentValuesAreParsedOrRefused) {
  auto ok = sim::parse_sim_config("64", "sim.bf16acc=0.25,sim.ftz=0.5");
  EXPECT_TRUE(ok.error.empty()) << ok.error;
  EXPECT_EQ(ok.devices[0].memory_bytes, 64ull << 20);
  EXPECT_EQ(ok.devices[0].speed, 1.0);
  EXPECT_EQ(ok.devices[1].speed, 0.25);
  EXPECT_EQ(ok.devices[2].speed, 0.5);
  EXPECT_EQ(sim::parse_sim_config(nullptr, "0.5").devices[4].speed, 0.5);
  EXPECT_NE(sim::parse_sim_config("lots", nullptr).error.find("POLYCHIP_SIM_MEMORY_MB"),
            std::string::npos);
  EXPECT_NE(sim::parse_sim_config(nullptr, "2").error.find("(0, 1]"), std::string::npos);
  EXPECT_NE(
      sim::parse_sim_config(nullptr, "sim.ftz=0.5,sim.bf16acc").error.find("device_type=speed"),
      std::string::npos);
}

}  // namespace
}  // namespace polychip::testing
