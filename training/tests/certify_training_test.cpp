// `polychip certify --suite training` and `polychip train --record-reference`
// end to end (the real binary): the shipped reference trace (NVIDIA
// numerics, emulated: sim.nvidia_emu) regenerates bit for bit; cpu,
// sim.faithful and opencl pass the cross-vendor tier against it over its
// 100 steps with the loss falling well below its start, alone and as a pool
// of data-parallel ranks; the drifting chip passes precision quick and fails
// training at its first divergent step, alone and in a pool; a
// trace with a planted divergence and a planted step-1 gradient error fails,
// naming the step and the tensor; results.json follows the schema. Under the
// statistical tier cpu passes the shipped envelope of 5 seeds and the
// drifting chip's curve falls outside it.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "alignment.hpp"
#include "cli_test_fixture.hpp"
#include "reference_trace.hpp"
#include "training_certify.hpp"

namespace polychip::training {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::slurp;

class CertifyTraining : public testing::CliTest {
 protected:
  int exit_code_of(const std::string& args) { return run(args).exit_code; }
  // Records `steps` steps on the shipped trace's device; their trace.
  ReferenceTrace regenerate(const ReferenceTrace& shipped, size_t steps) {
    const fs::path file = dir_ / "regenerated.json";
    EXPECT_EQ(
        exit_code_of("train -a " + shipped.device_type + " --precision " + shipped.precision +
                     " --steps " + std::to_string(steps) + " --out '" + (dir_ / "run").string() +
                     "' --record-reference '" + file.string() + "'"),
        0)
        << log();
    return read_trace(file.string());
  }
  json results(const std::string& sub) {
    const fs::path file = dir_ / sub / "results.json";
    const std::string check =
        "/usr/bin/python3 -c 'import json, sys, jsonschema; "
        "jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' '" +
        file.string() + "' '" + RESULTS_SCHEMA_FILE + "'";
    EXPECT_EQ(std::system(check.c_str()), 0) << file << " does not follow the schema";
    return json::parse(slurp(file));
  }
  std::string log() { return slurp(dir_ / "stdout") + slurp(dir_ / "stderr"); }
};

// The gradient checks of `shipped` up to `last_step` are `again`'s, bit for bit.
void expect_same_checks_to(const ReferenceTrace& again, const ReferenceTrace& shipped,
                           int64_t last_step) {
  std::vector<GradientCheck> expected;
  for (const GradientCheck& c : shipped.gradient_checks)
    if (c.step <= last_step) expected.push_back(c);
  EXPECT_FALSE(expected.empty());
  EXPECT_EQ(gradient_checks_json(again.gradient_checks), gradient_checks_json(expected));
}

// In CI: the first 25 steps of the shipped trace (sim.nvidia_emu runs ~1 s a
// step on a busy 2-core machine) reproduce bit for bit.
TEST_F(CertifyTraining, TheShippedTracesFirstStepsRegenerateBitForBit) {
  const ReferenceTrace shipped = read_trace(SHIPPED_TRACE_FILE);
  EXPECT_EQ(shipped.provenance, "emulated");
  const size_t steps = 25;
  const ReferenceTrace again = regenerate(shipped, steps);
  ASSERT_EQ(again.loss.size(), steps) << log();
  EXPECT_EQ(again.loss, std::vector<double>(shipped.loss.begin(), shipped.loss.begin() + steps));
  EXPECT_EQ(again.grad_norm,
            std::vector<double>(shipped.grad_norm.begin(), shipped.grad_norm.begin() + steps));
  EXPECT_EQ(again.step1_grad_norms, shipped.step1_grad_norms);
  expect_same_checks_to(again, shipped, static_cast<int64_t>(steps));
  EXPECT_EQ(again.provenance, shipped.provenance);
}

// The bf16 mixed-precision trace: its first 5 steps (sim.nvidia_emu in bf16 is
// slower) reproduce bit for bit, and cpu in bf16 passes the cross-vendor tier
// against it over 100 steps.
TEST_F(CertifyTraining, TheShippedBf16TracesFirstStepsRegenerateBitForBit) {
  const ReferenceTrace shipped = read_trace(SHIPPED_BF16_TRACE_FILE);
  EXPECT_EQ(shipped.precision, "bf16");
  EXPECT_EQ(shipped.workload.value("precision", ""), "bf16");
  const size_t steps = 5;
  const ReferenceTrace again = regenerate(shipped, steps);
  ASSERT_EQ(again.loss.size(), steps) << log();
  EXPECT_EQ(again.precision, "bf16");
  EXPECT_EQ(again.loss, std::vector<double>(shipped.loss.begin(), shipped.loss.begin() + steps));
  EXPECT_EQ(again.step1_grad_norms, shipped.step1_grad_norms);
  expect_same_checks_to(again, shipped, static_cast<int64_t>(steps));
}

TEST_F(CertifyTraining, CpuInBf16PassesTheCrossVendorTierAgainstTheShippedBf16Trace) {
  ASSERT_EQ(exit_code_of("certify --suite training --adapters cpu --no-progress --reference '" +
                         std::string(SHIPPED_BF16_TRACE_FILE) + "' --out '" +
                         (dir_ / "bf16").string() + "'"),
            0)
      << log();
  EXPECT_EQ(slurp(dir_ / "stderr"), "") << "--no-progress";
  const json r = results("bf16");
  for (const json& c : r["cases"]) {
    EXPECT_EQ(c["verdict"], "Pass") << c.dump();
    EXPECT_NE(c["id"].get<std::string>().find("/bf16"), std::string::npos) << c["id"];
  }
}

// The traces recorded on an NVIDIA H200 (the cuda adapter, 2026-11-28,
// docs/training.md): they say so, follow the emulated traces' workloads, and
// cpu and sim.faithful pass the cross-vendor tier against them, fp32 and bf16.
TEST_F(CertifyTraining, CpuAndSimPassTheCrossVendorTierAgainstTheTracesRecordedOnAnH200) {
  for (const auto& [recorded_file, emulated_file, precision] :
       {std::tuple{H200_TRACE_FILE, SHIPPED_TRACE_FILE, "fp32"},
        std::tuple{H200_BF16_TRACE_FILE, SHIPPED_BF16_TRACE_FILE, "bf16"}}) {
    const ReferenceTrace recorded = read_trace(recorded_file);
    const ReferenceTrace emulated = read_trace(emulated_file);
    EXPECT_EQ(recorded.provenance, "recorded");
    EXPECT_EQ(recorded.device_type, "nvidia.h200");
    EXPECT_EQ(recorded.precision, precision);
    EXPECT_EQ(recorded.workload, emulated.workload);
    EXPECT_EQ(recorded.corpus_hash, emulated.corpus_hash);
    const std::string out = (dir_ / precision).string();
    ASSERT_EQ(
        exit_code_of(fmt::format("certify --suite training --adapters {} --no-progress "
                                 "--reference '{}' --out '{}'",
                                 precision == std::string("fp32") ? "cpu,sim.faithful" : "cpu",
                                 recorded_file, out)),
        0)
        << log();
    const json r = results(precision);
    for (const json& c : r["cases"]) EXPECT_EQ(c["verdict"], "Pass") << c.dump();
    // fp32: two devices and their pool.
    EXPECT_EQ(r["cases"].size(), precision == std::string("fp32") ? 5u : 2u);
    EXPECT_EQ(r["caveats"], json::array());  // a reference recorded on NVIDIA hardware
  }
}

// The whole trace and its content hash (ctest training_reference_full_regeneration,
// label `long`: outside CI's default set; 1 to 8 minutes here).
TEST_F(CertifyTraining, FullTraceRegeneratesBitForBit) {
  const ReferenceTrace shipped = read_trace(SHIPPED_TRACE_FILE);
  ReferenceTrace again = regenerate(shipped, shipped.loss.size());
  EXPECT_EQ(again.loss, shipped.loss);
  EXPECT_EQ(again.grad_norm, shipped.grad_norm);
  EXPECT_EQ(again.step1_grad_norms, shipped.step1_grad_norms);
  again.polychip_version = shipped.polychip_version;  // a new release records the same run
  EXPECT_EQ(content_hash_of(again), shipped.content_hash);
}

// Progress reaches a log (stderr is no terminal here): each device's first
// and last step (the suite was silent while it trained). Each case's
// reproducer names polychip by its path, so that it runs as printed.
TEST_F(CertifyTraining, CpuSimAndOpenclPassTheCrossVendorTierAgainstTheShippedTrace) {
  ASSERT_EQ(exit_code_of("certify --suite training --adapters cpu,sim.faithful,opencl --out '" +
                         (dir_ / "pass").string() + "'"),
            0)
      << log();
  const std::string progress = slurp(dir_ / "stderr");
  for (const char* device : {"cpu", "sim.faithful", "opencl"})
    for (const char* step : {"1/100] step 1: loss ", "100/100] step 100: loss "})
      EXPECT_NE(progress.find(fmt::format("[{} {}", device, step)), std::string::npos)
          << device << " " << step << "\n"
          << progress;
  const json r = results("pass");
  EXPECT_EQ(r["verdict"], "Pass");
  ASSERT_EQ(r["cases"].size(), 7u);
  for (const json& c : r["cases"]) {
    EXPECT_EQ(c["verdict"], "Pass") << c.dump();
    const std::string adapter = c["adapter"];
    const bool pool = adapter == "cpu+sim.faithful+opencl";
    EXPECT_EQ(c["repro"], fmt::format("{} certify --suite training --adapters {}",
                                      fs::canonical(POLYCHIP_CLI).string(),
                                      pool ? "cpu,sim.faithful,opencl" : adapter));
    if (c["id"].get<std::string>().find("loss_curve") == std::string::npos) continue;
    EXPECT_EQ(c["metrics"]["steps"], 100);
    // The loss falls well below its start.
    EXPECT_LT(c["metrics"]["loss_last"].get<double>(),
              0.5 * c["metrics"]["loss_first"].get<double>());
  }
  // The three devices together, one data-parallel rank each, default's 8
  // rows split evenly (the planner's split and prediction recorded beside
  // it): the last case, its adapter entry naming the ranks.
  const json& pool = r["cases"].back();
  EXPECT_EQ(pool["id"], "training/default/fp32/pool/loss_curve/100steps");
  EXPECT_EQ(pool["metrics"]["rows_per_rank"], json({3, 3, 2}));
  for (const char* metric : {"step_seconds", "predicted_step_seconds", "eta", "gain"})
    EXPECT_GT(pool["metrics"][metric].get<double>(), 0) << metric;
  EXPECT_EQ(pool["metrics"]["planner_split"].get<std::string>().size(), 5u);  // "A:B:C"
  EXPECT_NE(pool["message"].get<std::string>().find("the planner's split"), std::string::npos);
  const json& entry = r["adapters"].back();
  EXPECT_EQ(entry["name"], "cpu+sim.faithful+opencl");
  ASSERT_EQ(entry["ranks"].size(), 3u);
  EXPECT_EQ(entry["ranks"][1],
            json({{"spec", "sim.faithful"}, {"device_type", "sim.faithful"}, {"rows", 3}}));
  EXPECT_EQ(entry["ranks"][2]["rows"], 2);
}

// The chip FlagGems users met: every op inside the precision suite's quick
// tolerances, a loss curve that drifts away in training. Its only changed
// kernel is the f32 gemm (drift_kernels.hpp): quick's gemm cases are the
// ones to run here; its other ops are the cpu kernels, which
// QuickPassesOnCpuAndSimFaithful certifies.
TEST_F(CertifyTraining, TheDriftingChipPassesPrecisionQuickAndFailsTraining) {
  ASSERT_EQ(exit_code_of("certify --suite precision --level quick --ops gemm --adapters sim.drift "
                         "--no-progress --out '" +
                         (dir_ / "precision").string() + "'"),
            0)
      << log();
  // With cpu beside it: the drifting chip fails alone and in a pool.
  ASSERT_EQ(exit_code_of("certify --suite training --adapters sim.drift,cpu --no-progress --out '" +
                         (dir_ / "training").string() + "'"),
            1)
      << log();
  const json r = results("training");
  ASSERT_EQ(r["cases"].size(), 5u);
  EXPECT_EQ(r["cases"][2]["verdict"], "Pass");  // cpu
  const json& pool = r["cases"][4];
  EXPECT_EQ(pool["adapter"], "sim.drift+cpu");
  EXPECT_EQ(pool["verdict"], "Fail");
  const int pool_step = pool["metrics"]["first_divergent_step"];
  EXPECT_GT(pool_step, 1);
  EXPECT_NE(pool["message"].get<std::string>().find(
                fmt::format("rows per rank 4:4: cross-vendor tier over 100 steps: ")),
            std::string::npos)
      << pool["message"];
  EXPECT_NE(pool["message"].get<std::string>().find(fmt::format("the first at step {}", pool_step)),
            std::string::npos)
      << pool["message"];
  const json& curve = r["cases"][0];
  EXPECT_EQ(curve["verdict"], "Fail");
  EXPECT_EQ(curve["metrics"]["first_divergent_step"], 14) << curve["message"];
  EXPECT_GT(curve["metrics"]["mean_relative"].get<double>(), 0.02);
  // Its curve leaves the statistical tier's envelope of 5 seeds too, later:
  // the seeds spread up to 3.5% (docs/training.md).
  const CurveComparison statistical = compare_with_envelope(
      shipped_loss_envelope(), curve["metrics"]["loss"], alignment_criteria("statistical"));
  EXPECT_FALSE(statistical.pass) << statistical.summary;
  EXPECT_EQ(statistical.first_outside_step, 22) << statistical.summary;
  // Its weight-gradient GEMMs drift. The shipped trace's gradient checks
  // (before clipping) put the tied embedding's gradient, first in forward
  // order and a drifting GEMM's, out of bounds first; a weight gradient that
  // a drifting GEMM computes deviates most (measured: h.2.attn.c_attn.weight,
  // 0.67 relative in direction; wte.weight 0.39), and no bias or norm, whose
  // ops are the cpu's.
  const json& step1 = r["cases"][1]["metrics"];
  EXPECT_TRUE(step1["before_clipping"].get<bool>());
  EXPECT_EQ(step1["first_out_of_bounds"], "wte.weight");
  EXPECT_EQ(step1["culprit_op"], "gemm (the weight gradient, trans_a)") << step1["culprit_tensor"];
  EXPECT_GT(step1["culprit_relative"].get<double>(), 0.3);
}

// A reference recorded on the very chip being certified passes it, whatever
// its defects: such a verdict carries a caveat (the shipped references,
// NVIDIA's emulation and recorded NVIDIA hardware, carry none: the H200 and
// statistical tests).
TEST_F(CertifyTraining, AReferenceRecordedOnAnotherDeviceIsACaveatOfThePass) {
  const fs::path own = dir_ / "drift_tiny.json";
  ASSERT_EQ(exit_code_of("train -a sim.drift -p tiny --steps 10 --out '" + (dir_ / "run").string() +
                         "' --record-reference '" + own.string() + "'"),
            0)
      << log();
  ASSERT_EQ(exit_code_of("certify --suite training --adapters sim.drift --no-progress "
                         "--reference '" +
                         own.string() + "' --out '" + (dir_ / "own").string() + "'"),
            0)
      << log();
  const json r = results("own");
  EXPECT_EQ(r["verdict"], "Pass");
  EXPECT_EQ(r["caveats"],
            json::array({"the reference trace " + own.string() +
                         " was recorded on sim.drift, neither NVIDIA hardware nor its emulation: "
                         "a Pass shows agreement with that device only"}));
  EXPECT_NE(log().find("\noverall: Pass (with 1 caveat)\n"), std::string::npos) << log();
}

// One wrong bias gradient (cpu's c_fc.bias gradient sums half the rows,
// the patch library) against a reference of NVIDIA's emulated numerics that
// holds gradient checks: the step-1 case fails naming a c_fc.bias and the
// op that computes it, before clipping spreads the error over every tensor.
TEST_F(CertifyTraining, AChipWithOneWrongBiasGradientIsNamed) {
  const fs::path reference = dir_ / "emulated_tiny.json";
  ASSERT_EQ(
      exit_code_of("train -a sim.nvidia_emu -p tiny --steps 10 --out '" + (dir_ / "run").string() +
                   "' --record-reference '" + reference.string() + "'"),
      0)
      << log();
  EXPECT_EQ(read_trace(reference.string()).gradient_checks.size(), 4u);  // steps 1, 2, 5, 10
  EXPECT_EQ(run("certify --suite training --adapters cpu --no-progress --reference '" +
                    reference.string() + "' --out '" + (dir_ / "bias").string() + "'",
                "POLYCHIP_PATCHES='" BIAS_GRAD_PATCH_LIBRARY "'")
                .exit_code,
            1)
      << log();
  const json r = results("bias");
  ASSERT_EQ(r["cases"].size(), 2u);
  const json& step1 = r["cases"][1];
  EXPECT_EQ(step1["verdict"], "Fail");
  EXPECT_TRUE(step1["metrics"]["before_clipping"].get<bool>());
  const std::string culprit = step1["metrics"]["culprit_tensor"];
  EXPECT_TRUE(culprit == "h.0.mlp.c_fc.bias" || culprit == "h.1.mlp.c_fc.bias") << culprit;
  EXPECT_EQ(step1["metrics"]["culprit_op"], "reduce_sum (axis 0: the bias gradient)");
  EXPECT_NE(step1["message"].get<std::string>().find(culprit + " deviates most"), std::string::npos)
      << step1["message"];
  // Without the patch the same chip passes against the same reference.
  ASSERT_EQ(exit_code_of("certify --suite training --adapters cpu --no-progress --reference '" +
                         reference.string() + "' --out '" + (dir_ / "plain").string() + "'"),
            0)
      << log();
  EXPECT_EQ(results("plain")["cases"][1]["verdict"], "Pass");
}

TEST_F(CertifyTraining, CpuPassesTheStatisticalTierAgainstTheShippedEnvelope) {
  ASSERT_EQ(exit_code_of("certify --suite training --tier statistical --adapters cpu "
                         "--no-progress --out '" +
                         (dir_ / "statistical").string() + "'"),
            0)
      << log();
  const json r = results("statistical");
  EXPECT_EQ(r["run"]["tier"], "statistical");
  EXPECT_EQ(r["run"]["reference_envelope"], "shipped");
  EXPECT_EQ(r["caveats"], json::array());
  ASSERT_EQ(r["cases"].size(), 1u);  // an envelope holds no step-1 gradients
  const json& curve = r["cases"][0];
  EXPECT_EQ(curve["verdict"], "Pass") << curve["message"];
  EXPECT_EQ(curve["metrics"]["steps"], 100);
  EXPECT_EQ(curve["metrics"]["first_divergent_step"], 0);
  EXPECT_EQ(curve["metrics"]["envelope_seeds"].size(), 5u);
  EXPECT_EQ(curve["tolerance"]["margin_std"], 2.0);
  // A trace is not an envelope: a usage error naming the schema.
  EXPECT_EQ(exit_code_of("certify --suite training --tier statistical --adapters cpu "
                         "--reference '" SHIPPED_TRACE_FILE "' --out '" +
                         (dir_ / "x").string() + "'"),
            2);
  EXPECT_NE(log().find("expected polychip.loss_envelope/1"), std::string::npos) << log();
}

TEST_F(CertifyTraining, APlantedDivergenceFailsNamingTheFirstStepAndTheTensor) {
  ReferenceTrace bad = read_trace(SHIPPED_TRACE_FILE);
  for (size_t i = 39; i < bad.loss.size(); ++i) bad.loss[i] *= 1.05;  // from step 40 on
  bad.gradient_checks[0].tensors[5].norm *= 1.01;                     // step 1's, before clipping
  bad.content_hash = content_hash_of(bad);
  const fs::path file = dir_ / "bad.json";
  write_trace(file.string(), bad);
  ASSERT_EQ(exit_code_of("certify --suite training --adapters cpu --no-progress --reference '" +
                         file.string() + "' --out '" + (dir_ / "fail").string() + "'"),
            1)
      << log();
  const json r = results("fail");
  EXPECT_EQ(r["verdict"], "Fail");
  ASSERT_EQ(r["cases"].size(), 2u);
  const json& curve = r["cases"][0];
  EXPECT_EQ(curve["verdict"], "Fail");
  EXPECT_EQ(curve["metrics"]["first_divergent_step"], 40);
  EXPECT_NE(curve["message"].get<std::string>().find("the first at step 40"), std::string::npos)
      << curve["message"];
  const json& grads = r["cases"][1];
  EXPECT_EQ(grads["verdict"], "Fail");
  EXPECT_EQ(grads["metrics"]["first_out_of_bounds"], bad.gradient_checks[0].tensors[5].name);
  EXPECT_EQ(grads["metrics"]["culprit_tensor"], bad.gradient_checks[0].tensors[5].name);
  // A changed file is refused before anything runs.
  std::string text = slurp(file);
  text.replace(text.find("\"preset\": \"default\""), 19, "\"preset\": \"defaulT\"");
  std::ofstream(file) << text;
  EXPECT_EQ(exit_code_of("certify --suite training --adapters cpu --reference '" + file.string() +
                         "' --out '" + (dir_ / "x").string() + "'"),
            2);
  EXPECT_NE(log().find("does not match its content"), std::string::npos) << log();
}

// A trace whose step-1 tensors are not the model's (edited, re-hashed) is
// refused before training, not after the whole run.
TEST_F(CertifyTraining, AReferenceNamingOtherStep1TensorsIsRefusedBeforeTraining) {
  ReferenceTrace other = read_trace(SHIPPED_TRACE_FILE);
  other.step1_grad_norms.pop_back();
  other.content_hash = content_hash_of(other);
  ReferenceTrace renamed = read_trace(SHIPPED_TRACE_FILE);
  renamed.gradient_checks[2].tensors[7].name = "h.9.ln_1.weight";
  renamed.content_hash = content_hash_of(renamed);
  write_trace((dir_ / "renamed.json").string(), renamed);
  EXPECT_EQ(exit_code_of("certify --suite training --adapters cpu --reference '" +
                         (dir_ / "renamed.json").string() + "' --out '" +
                         (dir_ / "renamed").string() + "'"),
            2);
  EXPECT_NE(log().find("its gradient check of step 5 names 'h.9.ln_1.weight' as tensor 7"),
            std::string::npos)
      << log();
  const fs::path file = dir_ / "other.json";
  write_trace(file.string(), other);
  EXPECT_EQ(exit_code_of("certify --suite training --adapters cpu --reference '" + file.string() +
                         "' --out '" + (dir_ / "other").string() + "'"),
            2);
  EXPECT_NE(log().find("is nothing in the trace, 'ln_f.bias' in the model"), std::string::npos)
      << log();
  EXPECT_EQ(log().find("certify: training"), std::string::npos) << log();
}

}  // namespace
}  // namespace polychip::training
