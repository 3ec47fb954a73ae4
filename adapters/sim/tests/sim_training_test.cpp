// The standard training workload on the sim devices that exist for it:
// sim.nvidia_emu (the NVIDIA reference as a device) reproduces its curve bit
// for bit, and sim.drift, which passes the precision suite's quick level,
// leaves the cross-vendor tier of the cpu's curve at a known step.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "polychip/runtime.hpp"
#include "trainer.hpp"

namespace polychip::training {
namespace {

std::vector<StepRecord> run_on(Runtime& runtime, const std::string& device_type, const char* preset,
                               int steps) {
  const Device device = runtime.device(device_type);
  Stream stream(device);
  HalOps ops(runtime.dispatcher(), stream);
  Trainer trainer(train_preset(preset), ops);
  for (int s = 0; s < steps; ++s) trainer.step();
  return trainer.history();
}

Runtime make_runtime() {
  RuntimeOptions options;
  options.builtin_adapters = builtin_adapter_entries();
  options.selected_adapters = std::vector<std::string>{"cpu", "sim"};
  return Runtime(options);
}

// The cross-vendor tier's per-step bound (docs/training.md).
bool within_cross_vendor_bound(double loss, double reference) {
  return std::abs(loss - reference) <= 1e-3 + 1e-2 * std::abs(reference);
}

TEST(SimTraining, NvidiaEmulationReproducesItsCurveBitForBit) {
  Runtime runtime = make_runtime();
  const auto first = run_on(runtime, "sim.nvidia_emu", "tiny", 10);
  const auto second = run_on(runtime, "sim.nvidia_emu", "tiny", 10);
  const auto cpu = run_on(runtime, "cpu", "tiny", 10);
  ASSERT_EQ(first.size(), 10u);
  ASSERT_EQ(second.size(), first.size());
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].loss, second[i].loss) << "step " << i + 1;
    EXPECT_EQ(first[i].grad_norm, second[i].grad_norm) << "step " << i + 1;
    EXPECT_TRUE(within_cross_vendor_bound(cpu[i].loss, first[i].loss)) << "step " << i + 1;
  }
}

TEST(SimTraining, DriftLeavesTheCrossVendorTierAtStep14OfTheDefaultWorkload) {
  // docs/sim-profiles.md gives the 100-step numbers; 14 steps show where.
  Runtime runtime = make_runtime();
  const int steps = 14;
  const auto cpu = run_on(runtime, "cpu", "default", steps);
  const auto drift = run_on(runtime, "sim.drift", "default", steps);
  ASSERT_EQ(drift.size(), cpu.size());
  std::optional<int> first_outside;
  for (size_t i = 0; i < cpu.size() && !first_outside; ++i)
    if (!within_cross_vendor_bound(drift[i].loss, cpu[i].loss)) first_outside = int(i) + 1;
  ASSERT_TRUE(first_outside.has_value())
      << "sim.drift stayed inside the tier for " << steps << " steps";
  EXPECT_EQ(*first_outside, 14);
  // Not a defect of the first steps: the curves start the same.
  EXPECT_EQ(drift[0].loss, cpu[0].loss);
}

}  // namespace
}  // namespace polychip::training
