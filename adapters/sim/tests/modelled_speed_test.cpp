// Modelled-speed chips end to end (run with POLYCHIP_SIM_MODELLED set by
// CTest, see CMakeLists.txt): the device types exist after the built-in
// profiles, kernels take their roofline time on the device timeline (never
// less: stream_synchronize waits for the timeline's end), and the results
// are the faithful cpu kernels'.
#include <gtest/gtest.h>

#include <chrono>

#include "polychip/runtime.hpp"
#include "trainer.hpp"

namespace polychip::training {
namespace {

using Clock = std::chrono::steady_clock;

// CMakeLists.txt sets POLYCHIP_SIM_MODELLED=slow_mem=1000:0.01:0 (10 MB/s).
constexpr double kBytesPerSecond = 0.01e9;
constexpr int64_t kElements = 25000;  // an f32 add moves 3 x 100 kB: 30 ms on slow_mem
constexpr int kLaunches = 5;

Runtime make_runtime() {
  RuntimeOptions options;
  options.builtin_adapters = builtin_adapter_entries();
  options.selected_adapters = std::vector<std::string>{"sim"};
  return Runtime(options);
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

TEST(ModelledSpeed, KernelsTakeTheirRooflineTimeOnTheDeviceTimeline) {
  Runtime runtime = make_runtime();
  const Device device = runtime.device("sim.modelled-slow_mem");
  EXPECT_EQ(device.device_type(), "sim.modelled-slow_mem");
  Stream stream(device);
  HalOps ops(runtime.dispatcher(), stream);
  std::vector<float> ones(kElements, 1.0f);
  Tensor a = Tensor::from_host(device, DType::kF32, {kElements}, ones);
  Tensor sum(device, DType::kF32, {kElements});
  stream.synchronize();
  const double roofline = 3.0 * 4 * kElements / kBytesPerSecond;  // 30 ms an add

  const auto start = Clock::now();
  ops.add(a, a, sum);
  for (int k = 1; k < kLaunches; ++k) ops.add(sum, a, sum);
  stream.synchronize();
  const double done = seconds(Clock::now() - start);

  EXPECT_GE(done, kLaunches * roofline);  // never faster than the model
  EXPECT_LT(done, kLaunches * roofline + 1.0);
  const std::vector<float> out = sum.to_vector<float>();
  EXPECT_EQ(out.front(), static_cast<float>(kLaunches + 1));
  EXPECT_EQ(out.back(), static_cast<float>(kLaunches + 1));
}

}  // namespace
}  // namespace polychip::training
