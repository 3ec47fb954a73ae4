// The same workload on every adapter that runs here (sim.faithful and
// OpenCL on PoCL besides cpu): every op goes through the dispatcher, so the
// curves agree closely with cpu's over a few steps.
#include <gtest/gtest.h>

#include <cmath>

#include "polychip/runtime.hpp"
#include "trainer.hpp"

namespace polychip::training {
namespace {

std::vector<StepRecord> run_on(Runtime& runtime, const std::string& device_spec, int steps) {
  const Device device = runtime.device(device_spec);
  Stream stream(device);
  HalOps ops(runtime.dispatcher(), stream);
  Trainer trainer(train_preset("tiny"), ops);
  for (int s = 0; s < steps; ++s) trainer.step();
  return trainer.history();
}

TEST(TrainingAdapters, SimAndOpenclFollowTheCpuCurve) {
  RuntimeOptions options;
  options.builtin_adapters = builtin_adapter_entries();
  options.selected_adapters = std::vector<std::string>{"cpu", "sim", "opencl"};
  Runtime runtime(options);
  const std::vector<StepRecord> cpu = run_on(runtime, "cpu", 5);
  for (const char* spec : {"sim.faithful", "opencl"}) {
    if (spec == std::string("opencl") && !runtime.find_device_type("opencl.pocl-cpu")) {
      ADD_FAILURE() << "no OpenCL device: PoCL is part of this machine's setup";
      continue;
    }
    const std::vector<StepRecord> other = run_on(runtime, spec, 5);
    ASSERT_EQ(other.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      EXPECT_NEAR(other[i].loss, cpu[i].loss, 1e-4 * cpu[i].loss) << spec << " step " << i + 1;
      EXPECT_NEAR(other[i].grad_norm, cpu[i].grad_norm, 1e-3 * cpu[i].grad_norm)
          << spec << " step " << i + 1;
    }
  }
}

}  // namespace
}  // namespace polychip::training
