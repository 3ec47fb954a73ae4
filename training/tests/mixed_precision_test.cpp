// bf16 mixed precision on the cpu adapter: the model really runs in bf16
// (its parameters are the bf16 rounding of fp32 master weights, and the
// curve differs from fp32's), the loss falls, a run reproduces itself bit
// for bit, checkpoint + resume continues bit for bit, and a checkpoint of
// one precision is refused by a run of the other.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "checkpoint.hpp"
#include "polychip/error.hpp"
#include "runtime_fixture.hpp"
#include "trainer.hpp"

namespace polychip::training {
namespace {

TrainConfig bf16_config(const char* preset = "tiny") {
  TrainConfig config = train_preset(preset);
  config.precision = "bf16";
  return config;
}

double bf16_rounding(double x) {
  float f = static_cast<float>(x);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;  // round to nearest even
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST(MixedPrecision, TheModelComputesInBf16FromFp32MasterWeights) {
  CpuRuntime rt;
  Trainer trainer(bf16_config(), rt.ops);
  EXPECT_EQ(trainer.model().dtype(), DType::kBF16);
  EXPECT_EQ(trainer.master_params().dtype(), DType::kF32);
  EXPECT_EQ(trainer.master_grads().dtype(), DType::kF32);
  for (int s = 0; s < 3; ++s) trainer.step();
  const std::vector<double> master = trainer.state().params, model = trainer.model().params();
  ASSERT_EQ(master.size(), model.size());
  size_t differ = 0;
  for (size_t i = 0; i < master.size(); ++i) {
    ASSERT_EQ(model[i], bf16_rounding(master[i])) << "parameter " << i;
    differ += model[i] != master[i];
  }
  EXPECT_GT(differ, master.size() / 2) << "the master weights are not kept beyond bf16";
}

TEST(MixedPrecision, Bf16AndFp32CurvesDiffer) {
  CpuRuntime rt;
  TrainConfig fp32 = train_preset("tiny");
  Trainer a(fp32, rt.ops), b(bf16_config(), rt.ops);
  a.step(), b.step();
  EXPECT_NE(a.history()[0].loss, b.history()[0].loss);
  EXPECT_NEAR(a.history()[0].loss, b.history()[0].loss, 0.05);
}

TEST(MixedPrecision, TheLossFallsAndARunReproducesItselfBitForBit) {
  CpuRuntime rt;
  TrainConfig config = bf16_config();
  config.model.channels = 16;
  config.batch_size = 32;
  config.learning_rate = 1e-2;
  Trainer a(config, rt.ops), b(config, rt.ops);
  double first = 0, last = 0;
  for (int s = 0; s < 50; ++s) {
    const StepRecord ra = a.step(), rb = b.step();
    ASSERT_EQ(ra.loss, rb.loss) << "step " << ra.step;
    ASSERT_EQ(ra.grad_norm, rb.grad_norm) << "step " << ra.step;
    ASSERT_TRUE(std::isfinite(ra.loss)) << "step " << ra.step;
    if (s < 5) first += ra.loss / 5;
    if (s >= 45) last += ra.loss / 5;
  }
  EXPECT_LT(last, first - 1.0) << "mean loss of steps 1-5 " << first << ", 46-50 " << last;
  EXPECT_EQ(a.state().params, b.state().params);
}

TEST(MixedPrecision, CheckpointAndResumeContinueBitForBitAndPrecisionsDoNotMix) {
  CpuRuntime rt;
  const TrainConfig config = bf16_config();
  Trainer straight(config, rt.ops);
  for (int s = 0; s < 6; ++s) straight.step();
  const auto dir = (std::filesystem::temp_directory_path() /
                    ("polychip_training_bf16_resume_" + std::to_string(::getpid())))
                       .string();
  {
    Trainer first_half(config, rt.ops);
    for (int s = 0; s < 3; ++s) first_half.step();
    write_checkpoint(dir, first_half);
  }
  Trainer resumed(config, rt.ops);
  resumed.restore(read_checkpoint(dir, config));
  for (int s = 0; s < 3; ++s) resumed.step();
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(straight.history()[i].loss, resumed.history()[i].loss) << "step " << i + 1;
    EXPECT_EQ(straight.history()[i].grad_norm, resumed.history()[i].grad_norm) << "step " << i + 1;
  }
  EXPECT_EQ(straight.state().params, resumed.state().params);
  EXPECT_EQ(straight.state().adam_v, resumed.state().adam_v);
  try {
    read_checkpoint(dir, train_preset("tiny"));
    ADD_FAILURE() << "an fp32 run resumed a bf16 checkpoint";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("precision"), std::string::npos) << e.message();
  }
  std::filesystem::remove_all(dir);
}

TEST(MixedPrecision, AnUnknownPrecisionIsRefusedNamingIt) {
  TrainConfig config = train_preset("tiny");
  config.precision = "fp8";
  try {
    validate(config);
    ADD_FAILURE() << "fp8 accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("precision must be fp32 or bf16, got 'fp8'"), std::string::npos)
        << e.message();
  }
}

}  // namespace
}  // namespace polychip::training
