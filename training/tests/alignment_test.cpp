// The alignment criteria and the step-1 diagnosis on planted curves and
// gradients, and the reference trace: its file, content hash and checks.
#include "alignment.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "gpt2_params.hpp"
#include "polychip/error.hpp"
#include "reference_trace.hpp"
#include "refusal.hpp"

namespace polychip::training {
namespace {

std::vector<double> falling_curve(int steps) {
  std::vector<double> loss;
  for (int i = 0; i < steps; ++i) loss.push_back(2.0 + 3.5 * std::exp(-i / 30.0));
  return loss;
}

TEST(Alignment, TheSameCurvePassesEveryTier) {
  const auto ref = falling_curve(100);
  for (const char* tier : {"exact", "cross-vendor"}) {
    const CurveComparison c = compare_loss_curves(ref, ref, alignment_criteria(tier));
    EXPECT_TRUE(c.pass) << tier << ": " << c.summary;
    EXPECT_EQ(c.first_outside_step, 0);
  }
}

TEST(Alignment, CrossVendorAllowsRoundingButNamesTheFirstDivergentStep) {
  const auto ref = falling_curve(100);
  auto run = ref;
  for (double& v : run) v *= 1 + 2e-3;  // inside rtol 1e-2
  EXPECT_TRUE(compare_loss_curves(ref, run, alignment_criteria("cross-vendor")).pass);
  EXPECT_FALSE(compare_loss_curves(ref, run, alignment_criteria("exact")).pass);
  // A drift that starts at step 37 and grows.
  run = ref;
  for (int i = 36; i < 100; ++i) run[i] *= 1.02 + 0.004 * (i - 36);
  const CurveComparison c = compare_loss_curves(ref, run, alignment_criteria("cross-vendor"));
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.first_outside_step, 37) << c.summary;
  EXPECT_EQ(c.largest_step, 100);
  EXPECT_NE(c.summary.find("the first at step 37"), std::string::npos) << c.summary;
}

TEST(Alignment, OneStepOutsideIsAllowedPerHundredButNotTwo) {
  const auto ref = falling_curve(100);
  auto run = ref;
  run[50] += 0.5;
  EXPECT_TRUE(compare_loss_curves(ref, run, alignment_criteria("cross-vendor")).pass);
  run[60] += 0.5;
  const CurveComparison c = compare_loss_curves(ref, run, alignment_criteria("cross-vendor"));
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.steps_outside, 2);
  EXPECT_EQ(c.first_outside_step, 51);
}

// The steps allowed outside are max(1, N / 100): one for a short curve,
// N / 100 for a long one (and none in the exact tier).
TEST(Alignment, TheStepsAllowedOutsideScaleWithTheCurve) {
  const auto outside_at = [](int steps, std::vector<int> at) {
    const auto ref = falling_curve(steps);
    auto run = ref;
    for (int i : at) run[i] += 0.5;
    return compare_loss_curves(ref, run, alignment_criteria("cross-vendor"));
  };
  CurveComparison c = outside_at(10, {4});
  EXPECT_TRUE(c.pass) << c.summary;
  EXPECT_EQ(c.allowed_outside, 1);
  c = outside_at(250, {30, 200});
  EXPECT_TRUE(c.pass) << c.summary;
  EXPECT_EQ(c.allowed_outside, 2);
  EXPECT_FALSE(outside_at(250, {30, 200, 240}).pass);
  EXPECT_EQ(compare_loss_curves(falling_curve(250), falling_curve(250), alignment_criteria("exact"))
                .allowed_outside,
            0);
}

// The bounds are inclusive (|a - b| <= bound), the mean's limit is not
// (mean < limit), and the mean starts at mean_from_step itself: values here
// are exact in binary, so each comparison meets its bound exactly.
TEST(Alignment, EachBoundIsMetExactlyAtItsEdge) {
  const std::vector<double> ref(4, 2.0);
  AlignmentCriteria exact = alignment_criteria("exact");
  exact.exact_atol = 0.25;
  EXPECT_TRUE(compare_loss_curves(ref, {2.25, 2, 1.75, 2}, exact).pass);
  EXPECT_FALSE(compare_loss_curves(ref, {2.25, 2, 1.7, 2}, exact).pass);
  AlignmentCriteria cross = alignment_criteria("cross-vendor");
  cross.atol = 0.25;
  cross.rtol = 0.125;  // bound 0.25 + 0.125 x 2 = 0.5
  cross.mean_from_step = 3;
  cross.max_mean_relative = 1;
  CurveComparison c = compare_loss_curves(ref, {2.5, 2.5, 1.5, 2}, cross);
  EXPECT_EQ(c.steps_outside, 0) << c.summary;
  EXPECT_EQ(c.mean_relative, 0.125) << "steps 3 and 4: (0.25 + 0) / 2";
  // A mean exactly at the limit fails.
  cross.max_mean_relative = 0.125;
  EXPECT_FALSE(compare_loss_curves(ref, {2.5, 2.5, 1.5, 2}, cross).pass);
  cross.max_mean_relative = 0.25;
  c = compare_loss_curves(ref, {2.5, 2.5, 1.5, 2}, cross);
  EXPECT_TRUE(c.pass);
  EXPECT_NE(c.summary.find("mean relative error from step 3: 12.5% (limit 25%)"), std::string::npos)
      << c.summary;
  // A curve that ends before mean_from_step is not judged by the mean.
  cross.mean_from_step = 5;
  cross.max_mean_relative = 0;
  EXPECT_TRUE(compare_loss_curves(ref, {2.5, 2, 2, 2}, cross).pass);
}

// The largest deviation's step is the first of equal ones, step 1 when the
// curves agree.
TEST(Alignment, TheLargestDeviationIsTheFirstOfEqualOnes) {
  const std::vector<double> ref(8, 2.0);
  const AlignmentCriteria criteria = alignment_criteria("cross-vendor");
  EXPECT_EQ(compare_loss_curves(ref, ref, criteria).largest_step, 1);
  const CurveComparison c =
      compare_loss_curves(ref, {2, 2, 2.5, 2, 2, 2, 1.5, 2}, alignment_criteria("cross-vendor"));
  EXPECT_EQ(c.largest_step, 3) << c.summary;
  EXPECT_EQ(c.largest_abs, 0.5);
  EXPECT_EQ(c.largest_relative, 0.25);
}

TEST(Alignment, FlagPerfsMeanFailsASteadyOffsetJustInsideEachStep) {
  const auto ref = falling_curve(100);
  auto run = ref;
  // Every step 0.9% high plus atol: inside the per-step bound ...
  for (double& v : run) v = v * 1.009 + 0.0009;
  CurveComparison c = compare_loss_curves(ref, run, alignment_criteria("cross-vendor"));
  EXPECT_TRUE(c.pass) << c.summary;
  // ... a 2.5% offset from step 21 is outside the mean (and the steps).
  for (size_t i = 20; i < run.size(); ++i) run[i] = ref[i] * 1.025;
  c = compare_loss_curves(ref, run, alignment_criteria("cross-vendor"));
  EXPECT_FALSE(c.pass);
  EXPECT_GT(c.mean_relative, 0.02);
}

TEST(Alignment, ANaNLossIsOutside) {
  const auto ref = falling_curve(10);
  auto run = ref;
  run[3] = NAN;
  run[4] = NAN;
  const CurveComparison c = compare_loss_curves(ref, run, alignment_criteria("cross-vendor"));
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.first_outside_step, 4);
}

TEST(Alignment, UnknownTierAndLengthMismatchAreErrors) {
  EXPECT_THROW(alignment_criteria("statistical-ish"), Error);
  EXPECT_THROW(compare_loss_curves({1, 2}, {1}, alignment_criteria("exact")), Error);
}

TEST(Step1Diagnosis, NamesTheFirstTensorOutOfBoundsInForwardOrder) {
  std::vector<std::pair<std::string, double>> ref = {{"wte.weight", 1.5},
                                                     {"wpe.weight", 0.2},
                                                     {"h.0.ln_1.weight", 0.05},
                                                     {"h.0.attn.c_attn.weight", 0.8},
                                                     {"h.0.mlp.c_fc.weight", 0.6}};
  auto run = ref;
  run[1].second *= 1 + 1e-6;  // rounding: fine
  EXPECT_TRUE(diagnose_step1(ref, run).pass);
  run[3].second *= 1.01;  // attention's weight gradient
  run[4].second *= 1.5;   // and a worse one later
  const Step1Diagnosis d = diagnose_step1(ref, run);
  EXPECT_FALSE(d.pass);
  EXPECT_EQ(d.first_out, "h.0.attn.c_attn.weight");
  EXPECT_EQ(d.worst, "h.0.mlp.c_fc.weight");
  EXPECT_NE(d.summary.find("the gradient of h.0.attn.c_attn.weight is the first out of bounds"),
            std::string::npos)
      << d.summary;
}

// One wrong bias gradient, norms after clipping by the global norm: the
// wrong tensor moves the global norm, so every tensor's clipped norm moves
// by the same factor and the first tensor in forward order is out of
// bounds; the culprit, read with that factor taken out, is the bias.
TEST(Step1Diagnosis, NamesTheWrongTensorThroughTheClippingFactor) {
  const std::vector<std::pair<std::string, double>> grads = {
      {"wte.weight", 1.5},           {"wpe.weight", 0.2},
      {"h.0.ln_1.weight", 0.05},     {"h.0.attn.c_attn.weight", 0.8},
      {"h.0.attn.c_attn.bias", 0.3}, {"h.0.mlp.c_fc.weight", 0.6}};
  const auto clipped = [](std::vector<std::pair<std::string, double>> g) {
    double squares = 0;
    for (const auto& [name, norm] : g) squares += norm * norm;
    for (auto& [name, norm] : g) norm *= 1.0 / std::sqrt(squares);  // clip 1.0
    return g;
  };
  auto wrong = grads;
  wrong[4].second *= 1.5;  // the bias gradient, half again too large
  const Step1Diagnosis d = diagnose_step1(clipped(grads), clipped(wrong));
  EXPECT_FALSE(d.pass);
  EXPECT_EQ(d.first_out, "wte.weight");  // what norms compared as they are name
  EXPECT_EQ(d.culprit, "h.0.attn.c_attn.bias");
  EXPECT_NEAR(d.culprit_relative, 0.5, 1e-12);
  EXPECT_NE(d.summary.find("h.0.attn.c_attn.bias deviates most (0.5 relative)"), std::string::npos)
      << d.summary;
  // A non-finite norm is the culprit whatever the others do.
  wrong[2].second = NAN;
  EXPECT_EQ(diagnose_step1(clipped(grads), wrong).culprit, "h.0.ln_1.weight");
}

// The worst tensor is the largest relative deviation (not absolute), the
// first of equal ones; the bound atol + rtol |ref| is inclusive.
TEST(Step1Diagnosis, TheWorstIsRelativeFirstOfEqualOnesAndTheBoundInclusive) {
  const std::vector<std::pair<std::string, double>> ref{{"a", 100.0}, {"b", 0.5}, {"c", 0.5}};
  const Step1Diagnosis d = diagnose_step1(ref, {{"a", 101.0}, {"b", 0.5625}, {"c", 0.5625}}, 0.125);
  EXPECT_TRUE(d.pass) << d.summary;
  EXPECT_EQ(d.worst, "b") << d.summary;
  EXPECT_EQ(d.worst_relative, 0.125);
  // A zero reference: the bound is atol alone, met exactly.
  EXPECT_TRUE(diagnose_step1({{"d", 0.0}}, {{"d", kStep1GradAtol}}).pass);
  EXPECT_FALSE(diagnose_step1({{"d", 0.0}}, {{"d", 2 * kStep1GradAtol}}).pass);
}

// bf16 traces: the rounding spread of 8-bit significands between CPUs
// (1.1e-3 measured) passes; a gradient 5% off still fails, named.
TEST(Step1Diagnosis, Bf16TracesAllowTheirRoundingAndStillNameAWrongGradient) {
  EXPECT_EQ(step1_grad_rtol("fp32"), kStep1GradRtol);
  EXPECT_EQ(step1_grad_rtol("bf16"), kStep1GradRtolBf16);
  std::vector<std::pair<std::string, double>> ref = {
      {"wte.weight", 1.5}, {"h.0.ln_1.weight", 0.00126994375}, {"h.0.attn.c_attn.weight", 0.8}};
  auto run = ref;
  run[1].second = 0.00126855553;  // cpu in bf16 on an AMD EPYC
  EXPECT_FALSE(diagnose_step1(ref, run).pass) << "beyond the fp32 limit";
  EXPECT_TRUE(diagnose_step1(ref, run, step1_grad_rtol("bf16")).pass);
  run[2].second *= 1.05;
  const Step1Diagnosis d = diagnose_step1(ref, run, step1_grad_rtol("bf16"));
  EXPECT_FALSE(d.pass);
  EXPECT_EQ(d.first_out, "h.0.attn.c_attn.weight");
  EXPECT_NE(d.summary.find("limit 0.01"), std::string::npos) << d.summary;
}

TEST(ReferenceTrace, AChangedTraceFailsItsContentHash) {
  ReferenceTrace t;
  t.preset = "default";
  t.workload = {{"vocab_size", 256}};
  t.device_type = "cpu.host";
  t.provenance = trace_provenance(t.device_type);
  t.polychip_version = "0.1.0";
  t.corpus_hash = "00";
  t.loss = {5.5, 5.4};
  t.grad_norm = {2.5, 1.8};
  t.step1_grad_norms = {{"wte.weight", 1.0}};
  t.content_hash = content_hash_of(t);
  nlohmann::json j = trace_json(t);
  EXPECT_EQ(parse_trace(j).loss, t.loss);
  j["loss"][1] = 5.3;
  const std::string refusal = refusal_of(StatusCode::kDataCorruption, [&] { parse_trace(j); });
  EXPECT_NE(refusal.find("does not match its content"), std::string::npos) << refusal;
  EXPECT_EQ(trace_provenance("sim.nvidia_emu"), "emulated");
  EXPECT_EQ(trace_provenance("nvidia.h100_80gb_hbm3"), "recorded");
}

// A hand-made two-step trace of the cpu adapter, for the parser and file tests.
ReferenceTrace two_step_trace(const std::string& preset, std::vector<double> loss,
                              std::vector<double> grad_norm, double wte_grad_norm) {
  ReferenceTrace t;
  t.preset = preset;
  t.device_type = "cpu.host";
  t.loss = std::move(loss);
  t.grad_norm = std::move(grad_norm);
  t.step1_grad_norms = {{"wte.weight", wte_grad_norm}};
  return t;
}

// A trace file that is not one (hand-written, or edited and re-hashed):
// DATA_CORRUPTION saying what is wrong, before any of it is used.
TEST(ReferenceTrace, AMalformedTraceIsRefusedSayingWhy) {
  const ReferenceTrace t = two_step_trace("default", {5.5, 5.4}, {2.5, 1.8}, 1.0);
  const auto refusal = [](nlohmann::json j) {
    j.erase("content_hash");
    j["content_hash"] = "sha256:" + sha256_hex(j.dump());
    return refusal_of(StatusCode::kDataCorruption, [&] { parse_trace(j); });
  };
  const nlohmann::json good = trace_json(t);
  EXPECT_EQ(refusal(good), "accepted");
  nlohmann::json j = good;
  j["grad_norm"].erase(1);
  EXPECT_EQ(refusal(j), "reference trace: 2 losses and 1 gradient norms");
  j["loss"] = nlohmann::json::array();
  j["grad_norm"] = nlohmann::json::array();
  EXPECT_EQ(refusal(j), "reference trace: 0 losses and 0 gradient norms");
  j = good;
  j["step1_grad_norms"][0] = {"wte.weight"};
  EXPECT_NE(refusal(j).find("reference trace: malformed"), std::string::npos) << refusal(j);
  j = good;
  j.erase("corpus_hash");
  EXPECT_NE(refusal(j).find("key 'corpus_hash' not found"), std::string::npos) << refusal(j);
  j = good;
  j["schema"] = "polychip.loss_envelope/1";
  EXPECT_NE(refusal(j).find("expected polychip.reference_trace/1"), std::string::npos)
      << refusal(j);
  EXPECT_THROW(parse_trace(nlohmann::json::array()), Error);
}

// The file: written and read back whole; a missing file is NOT_FOUND, one
// that is not JSON or was changed after recording DATA_CORRUPTION naming it.
TEST(ReferenceTrace, TheFileRoundTripsAndADamagedOneIsRefused) {
  ReferenceTrace t = two_step_trace("tiny", {2.75, 2.5}, {1.25, 1.0}, 0.5);
  t.content_hash = content_hash_of(t);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("polychip_trace_" + std::to_string(::getpid()) + ".json"))
                               .string();
  write_trace(path, t);
  const ReferenceTrace back = read_trace(path);
  EXPECT_EQ(back.loss, t.loss);
  EXPECT_EQ(back.step1_grad_norms, t.step1_grad_norms);
  EXPECT_EQ(back.content_hash, t.content_hash);
  const auto refusal = [&](StatusCode expected) {
    return refusal_of(expected, [&] { read_trace(path); });
  };
  std::string text = trace_json(t).dump(1);
  text.replace(text.find("2.75"), 4, "2.70");
  std::ofstream(path) << text;
  std::string message = refusal(StatusCode::kDataCorruption);
  EXPECT_NE(message.find("content hash " + t.content_hash + " does not match its content (sha256:"),
            std::string::npos)
      << message;
  std::ofstream(path) << text.substr(0, text.size() / 2);
  message = refusal(StatusCode::kDataCorruption);
  EXPECT_NE(message.find("reference trace: " + path + " is not JSON"), std::string::npos)
      << message;
  std::filesystem::remove(path);
  message = refusal(StatusCode::kNotFound);
  EXPECT_NE(message.find("reference trace: cannot open " + path), std::string::npos) << message;
}

// A trace whose step-1 tensors are not the model's (another model's trace,
// or one edited and re-hashed) is refused naming the first difference.
TEST(ReferenceTrace, Step1TensorsMustBeTheModelsInForwardOrder) {
  const Gpt2ParamLayout layout(train_preset("tiny").model);
  ReferenceTrace t;
  t.preset = "tiny";
  for (const ParamInfo& p : layout.params()) t.step1_grad_norms.emplace_back(p.name, 1.0);
  check_step1_tensors(t, layout);
  const auto refusal = [&](const ReferenceTrace& edited) {
    return refusal_of(StatusCode::kDataCorruption, [&] { check_step1_tensors(edited, layout); });
  };
  const std::string n = std::to_string(layout.params().size());
  ReferenceTrace edited = t;
  std::swap(edited.step1_grad_norms[1], edited.step1_grad_norms[2]);
  EXPECT_NE(refusal(edited).find("tensor 1 is '" + layout.params()[2].name + "' in the trace, '" +
                                 layout.params()[1].name + "' in the model"),
            std::string::npos)
      << refusal(edited);
  edited = t;
  edited.step1_grad_norms.pop_back();
  EXPECT_NE(refusal(edited).find("the 'tiny' workload's model has " + n + ": tensor " +
                                 std::to_string(layout.params().size() - 1) + " is nothing"),
            std::string::npos)
      << refusal(edited);
  edited = t;
  edited.step1_grad_norms.emplace_back("lm_head.weight", 1.0);
  EXPECT_NE(refusal(edited).find("is 'lm_head.weight' in the trace, nothing in the model"),
            std::string::npos)
      << refusal(edited);
  edited.step1_grad_norms.clear();
  EXPECT_NE(refusal(edited).find("name 0 tensors"), std::string::npos) << refusal(edited);
}

}  // namespace
}  // namespace polychip::training
