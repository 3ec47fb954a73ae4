// The statistical tier: the loss envelope's statistics, file format and
// content hash; the judgement of a curve against it (margin, steps allowed
// outside, the first step outside); Megatron's rtol from the seeds' spread;
// and the shipped envelope: its trace-seed member is the shipped trace, a
// member regenerates bit for bit, a planted drift fails at its first step.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "alignment.hpp"
#include "loss_envelope.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "reference_trace.hpp"
#include "refusal.hpp"
#include "training_certify.hpp"

namespace polychip::training {
namespace {

// A private runtime of one adapter (Runtime::global() would load PoCL too).
RuntimeOptions only_adapter(const std::string& name) {
  RuntimeOptions options;
  options.builtin_adapters = builtin_adapter_entries();
  options.selected_adapters = std::vector<std::string>{name};
  return options;
}

// Seeds whose curves differ by a constant offset 0.01 * (seed - 2).
std::vector<EnvelopeMember> offset_members(int steps, std::initializer_list<uint64_t> seeds) {
  std::vector<EnvelopeMember> members;
  for (uint64_t seed : seeds) {
    EnvelopeMember m{seed, {}};
    for (int i = 0; i < steps; ++i)
      m.loss.push_back(2.0 + 3.0 * std::exp(-i / 30.0) + 0.01 * (static_cast<double>(seed) - 2));
    members.push_back(m);
  }
  return members;
}

TEST(LossEnvelope, PerStepMinMaxMeanAndSampleStd) {
  const LossEnvelope e = make_envelope("default", "sim.nvidia_emu", offset_members(10, {1, 2, 3}));
  ASSERT_EQ(e.steps(), 10);
  EXPECT_EQ(e.provenance, "emulated");
  const double base = 5.0;  // step 1: 2 + 3
  EXPECT_DOUBLE_EQ(e.loss_min[0], base - 0.01);
  EXPECT_DOUBLE_EQ(e.loss_max[0], base + 0.01);
  EXPECT_NEAR(e.loss_mean[0], base, 1e-15);
  EXPECT_NEAR(e.loss_std[0], 0.01, 1e-12);  // sqrt((0.01^2 + 0 + 0.01^2) / 2)
}

TEST(LossEnvelope, RefusesTooFewMembersRaggedCurvesAndRepeatedSeeds) {
  EXPECT_THROW(make_envelope("default", "cpu", offset_members(5, {1})), Error);
  EXPECT_THROW(make_envelope("default", "cpu", offset_members(5, {1, 1})), Error);
  auto ragged = offset_members(5, {1, 2});
  ragged[1].loss.pop_back();
  EXPECT_THROW(make_envelope("default", "cpu", ragged), Error);
  Runtime runtime(only_adapter("cpu"));
  EXPECT_THROW(record_envelope_member(runtime, "cpu", "default", 0, 1), Error);
}

// A seed whose run diverged: its NaN (or inf) would go into the file as null
// and the envelope could not be read back, so it is refused when made.
TEST(LossEnvelope, RefusesAMemberThatDiverged) {
  for (const auto& [bad, shown] : {std::pair<double, const char*>{NAN, "nan"}, {INFINITY, "inf"}}) {
    auto members = offset_members(5, {1, 2, 3});
    members[1].loss[3] = bad;
    const std::string refusal =
        refusal_of(StatusCode::kInvalidArgument, [&] { make_envelope("default", "cpu", members); });
    EXPECT_NE(refusal.find(std::string("member with seed 2 has loss ") + shown + " at step 4"),
              std::string::npos)
        << refusal;
  }
}

TEST(LossEnvelope, RoundTripsAndAChangedFileIsRefused) {
  const LossEnvelope e = make_envelope("default", "cpu", offset_members(20, {1, 2, 3, 4, 5}));
  const LossEnvelope back = parse_envelope(envelope_json(e));
  EXPECT_EQ(back.content_hash, e.content_hash);
  EXPECT_EQ(back.loss_std, e.loss_std);
  nlohmann::json changed = envelope_json(e);
  changed["members"][2]["loss"][7] = 9.0;
  std::string refusal = refusal_of(StatusCode::kDataCorruption, [&] { parse_envelope(changed); });
  EXPECT_NE(refusal.find("content hash " + e.content_hash + " does not match its content"),
            std::string::npos)
      << refusal;
  // Statistics edited and re-hashed by hand still have to be the members'.
  LossEnvelope forged = e;
  forged.loss_max[3] += 1;
  nlohmann::json j = envelope_json(forged);
  j.erase("content_hash");
  j["content_hash"] = "sha256:" + sha256_hex(j.dump());
  refusal = refusal_of(StatusCode::kDataCorruption, [&] { parse_envelope(j); });
  EXPECT_NE(refusal.find("statistics are not those of its members"), std::string::npos) << refusal;
  nlohmann::json trace_schema = envelope_json(e);
  trace_schema["schema"] = "polychip.reference_trace/1";
  EXPECT_THROW(parse_envelope(trace_schema), Error);
}

// Each statistic forged alone (and the file re-hashed) is refused; the file
// round-trips through disk, and a missing or non-JSON file is named.
TEST(LossEnvelope, EachForgedStatisticAndADamagedFileAreRefused) {
  const LossEnvelope e = make_envelope("default", "cpu", offset_members(6, {1, 2, 3}));
  for (const char* statistic : {"loss_min", "loss_max", "loss_mean", "loss_std"}) {
    nlohmann::json j = envelope_json(e);
    j[statistic][2] = j[statistic][2].get<double>() * (1 + 1e-15) + 1e-300;
    j.erase("content_hash");
    j["content_hash"] = "sha256:" + sha256_hex(j.dump());
    const std::string refusal = refusal_of(StatusCode::kDataCorruption, [&] { parse_envelope(j); });
    EXPECT_NE(refusal.find("statistics are not those of its members"), std::string::npos)
        << statistic << ": " << refusal;
  }
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("polychip_envelope_" + std::to_string(::getpid()) + ".json"))
                               .string();
  write_envelope(path, e);
  const LossEnvelope back = read_envelope(path);
  EXPECT_EQ(back.content_hash, e.content_hash);
  EXPECT_EQ(back.members[2].loss, e.members[2].loss);
  std::ofstream(path) << "{\"schema\": ";
  const auto refusal = [&](StatusCode expected) {
    return refusal_of(expected, [&] { read_envelope(path); });
  };
  std::string why = refusal(StatusCode::kDataCorruption);
  EXPECT_NE(why.find("loss envelope: " + path + " is not JSON"), std::string::npos) << why;
  std::filesystem::remove(path);
  why = refusal(StatusCode::kNotFound);
  EXPECT_NE(why.find("loss envelope: cannot open " + path), std::string::npos) << why;
}

TEST(StatisticalTier, JudgesAgainstTheWidenedEnvelope) {
  const LossEnvelope e = make_envelope("default", "cpu", offset_members(100, {1, 2, 3, 4, 5}));
  const AlignmentCriteria criteria = alignment_criteria("statistical");
  // Inside the bare envelope: every step.
  EXPECT_TRUE(compare_with_envelope(e, e.members[1].loss, criteria).pass);
  // Just above the max but within the margin (2 std + 1e-3; std = 0.0158).
  std::vector<double> run = e.loss_max;
  for (double& x : run) x += 0.02;
  CurveComparison c = compare_with_envelope(e, run, criteria);
  EXPECT_TRUE(c.pass) << c.summary;
  EXPECT_NEAR(c.largest_abs, 0.02, 1e-12);
  // Beyond the margin at one step (allowed: max(1, 100 / 100)), then two.
  run = e.loss_mean;
  run[59] = e.loss_min[59] - 0.05;
  c = compare_with_envelope(e, run, criteria);
  EXPECT_TRUE(c.pass) << c.summary;
  EXPECT_EQ(c.first_outside_step, 60);
  run[79] = NAN;
  c = compare_with_envelope(e, run, criteria);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.steps_outside, 2);
  EXPECT_EQ(c.first_outside_step, 60);
  EXPECT_NE(c.summary.find("the first at step 60"), std::string::npos) << c.summary;
  EXPECT_THROW(compare_with_envelope(e, std::vector<double>(99, 3.0), criteria), Error);
}

// Seeds that agree (std 0): the margin is margin_atol alone, met exactly at
// its edge (values exact in binary), and a short curve may have one step
// outside, a long one N / 100.
TEST(StatisticalTier, TheMarginIsInclusiveAndTheStepsAllowedScale) {
  const auto agreeing = [](int steps) {
    return make_envelope(
        "default", "cpu",
        {{1, std::vector<double>(steps, 2.0)}, {2, std::vector<double>(steps, 2.0)}});
  };
  AlignmentCriteria criteria = alignment_criteria("statistical");
  criteria.margin_atol = 0.25;
  const LossEnvelope e = agreeing(10);
  EXPECT_TRUE(compare_with_envelope(e, std::vector<double>(10, 2.25), criteria).pass);
  EXPECT_TRUE(compare_with_envelope(e, std::vector<double>(10, 1.75), criteria).pass);
  EXPECT_FALSE(compare_with_envelope(e, std::vector<double>(10, 2.3), criteria).pass);
  criteria = alignment_criteria("statistical");  // margin 1e-3
  EXPECT_TRUE(compare_with_envelope(e, std::vector<double>(10, 2.0005), criteria).pass);
  std::vector<double> run(10, 2.0);
  run[4] = 3;
  CurveComparison c = compare_with_envelope(e, run, criteria);
  EXPECT_TRUE(c.pass) << c.summary;
  EXPECT_EQ(c.allowed_outside, 1);
  const LossEnvelope long_one = agreeing(250);
  run.assign(250, 2.0);
  run[30] = run[200] = 3;
  c = compare_with_envelope(long_one, run, criteria);
  EXPECT_TRUE(c.pass) << c.summary;
  EXPECT_EQ(c.allowed_outside, 2);
  run[240] = 3;
  EXPECT_FALSE(compare_with_envelope(long_one, run, criteria).pass);
}

// The largest distance outside is the first of equal ones (step 1 when the
// run stays inside), relative to that step's mean; Megatron's spread, too.
TEST(StatisticalTier, TheLargestDistanceAndSpreadAreTheFirstOfEqualOnes) {
  const LossEnvelope e = make_envelope(
      "default", "cpu", {{1, std::vector<double>(10, 2.0)}, {2, std::vector<double>(10, 2.5)}});
  const AlignmentCriteria criteria = alignment_criteria("statistical");
  CurveComparison c = compare_with_envelope(e, e.loss_mean, criteria);
  EXPECT_EQ(c.largest_step, 1);
  EXPECT_EQ(c.largest_abs, 0);
  std::vector<double> run = e.loss_mean;
  run[2] = 3.5;
  run[6] = 1;
  c = compare_with_envelope(e, run, criteria);
  EXPECT_EQ(c.largest_step, 3) << c.summary;
  EXPECT_EQ(c.largest_abs, 1);
  EXPECT_EQ(c.largest_relative, 1 / 2.25);
  const ToleranceJustification j = justified_rtol(e);
  EXPECT_EQ(j.largest_step, 1) << j.summary;
  EXPECT_EQ(j.largest_relative_spread, 0.5 / 2.25);
}

TEST(StatisticalTier, MegatronRtolFromTheSeedsSpread) {
  // Spread 0.04 everywhere: the largest relative one where the loss is
  // lowest, the last step (mean 2 + 3 e^(-49/30)).
  ToleranceJustification j =
      justified_rtol(make_envelope("default", "cpu", offset_members(50, {1, 2, 3, 4, 5})));
  EXPECT_EQ(j.largest_step, 50);
  const double last_mean = 2 + 3 * std::exp(-49 / 30.0) + 0.01;  // offsets -0.01 .. 0.03
  EXPECT_NEAR(j.largest_relative_spread, 0.04 / last_mean, 1e-12);
  EXPECT_NEAR(j.rtol, 1.5 * 0.04 / last_mean, 1e-12);
  // Seeds that agree to 1e-6: the floor 0.001.
  auto close = offset_members(50, {1, 2});
  for (double& x : close[1].loss) x = close[0].loss[&x - close[1].loss.data()] + 1e-6;
  j = justified_rtol(make_envelope("default", "cpu", close));
  EXPECT_DOUBLE_EQ(j.rtol, 0.001);
}

// The shipped envelope: 5 seeds of the initial weights, the default workload
// on sim.nvidia_emu; the seed of the shipped trace is that trace.
TEST(ShippedEnvelope, HoldsFiveSeedsOfTheShippedTracesWorkload) {
  const LossEnvelope e = shipped_loss_envelope();
  const ReferenceTrace trace = shipped_reference_trace();
  EXPECT_EQ(e.members.size(), 5u);
  EXPECT_EQ(e.steps(), static_cast<int64_t>(trace.loss.size()));
  EXPECT_EQ(e.device_type, trace.device_type);
  EXPECT_EQ(e.workload, trace.workload);
  ASSERT_EQ(e.members[0].init_seed, trace.workload.at("seed").get<uint64_t>());
  EXPECT_EQ(e.members[0].loss, trace.loss);
}

TEST(ShippedEnvelope, AMemberRegeneratesBitForBit) {
  const LossEnvelope e = shipped_loss_envelope();
  const EnvelopeMember& shipped = e.members.back();
  const int64_t steps = 4;  // sim.nvidia_emu: about 1 s a step on a busy machine
  Runtime runtime(only_adapter("sim"));
  const EnvelopeMember again =
      record_envelope_member(runtime, e.device_type, e.preset, steps, shipped.init_seed);
  EXPECT_EQ(again.loss, std::vector<double>(shipped.loss.begin(), shipped.loss.begin() + steps));
}

TEST(ShippedEnvelope, APlantedDriftFailsAtItsFirstStepOutside) {
  const LossEnvelope e = shipped_loss_envelope();
  const AlignmentCriteria criteria = alignment_criteria("statistical");
  std::vector<double> run = shipped_reference_trace().loss;
  EXPECT_TRUE(compare_with_envelope(e, run, criteria).pass);
  // A curve creeping up by 0.1% a step from step 30: outside first at the
  // step where the drift passes the envelope's widened top.
  int64_t expected_first = 0;
  for (size_t i = 29; i < run.size(); ++i) {
    run[i] *= 1 + 0.001 * static_cast<double>(i - 28);
    const double top = e.loss_max[i] + criteria.margin_std * e.loss_std[i] + criteria.margin_atol;
    if (expected_first == 0 && run[i] > top) expected_first = static_cast<int64_t>(i) + 1;
  }
  ASSERT_NE(expected_first, 0) << "the planted drift stays inside the envelope";
  const CurveComparison c = compare_with_envelope(e, run, criteria);
  EXPECT_FALSE(c.pass) << c.summary;
  EXPECT_EQ(c.first_outside_step, expected_first) << c.summary;
}

TEST(ShippedEnvelope, JustifiesTheDocumentedRtol) {
  // docs/training.md, "Alignment tiers", quotes these numbers: a re-recorded
  // envelope must update them there.
  const ToleranceJustification j = justified_rtol(shipped_loss_envelope());
  EXPECT_EQ(j.largest_step, 70) << j.summary;
  EXPECT_NEAR(j.largest_relative_spread, 0.03469, 5e-6) << j.summary;
  EXPECT_NEAR(j.largest_relative_std, 0.01303, 5e-6) << j.summary;
  EXPECT_NEAR(j.rtol, 0.05204, 5e-6) << j.summary;
}

}  // namespace
}  // namespace polychip::training
