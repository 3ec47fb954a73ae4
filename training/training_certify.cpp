#include "training_certify.hpp"

#include <chrono>
#include <optional>

#include <fmt/format.h>

#include "alignment.hpp"
#include "checkpoint.hpp"
#include "data_parallel.hpp"
#include "device_targets.hpp"
#include "hal_ops.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "pool_training.hpp"
#include "progress.hpp"
#include "results.hpp"
#include "results_folder.hpp"
#include "supervisor.hpp"
#include "worker.hpp"

namespace polychip::training {

extern const char* const kShippedReferenceTraceJson;
extern const char* const kShippedLossEnvelopeJson;

namespace {

int usage_error(const std::string& message) {
  fmt::print(stderr, "polychip certify: {}\n", message);
  return 2;
}

nlohmann::json case_record(const std::string& adapter, const std::string& id, bool pass,
                           const std::string& message, nlohmann::json metrics,
                           nlohmann::json tolerance, const std::string& repro, double ms) {
  return {{"id", id},
          {"suite", "training"},
          {"adapter", adapter},
          {"op", "training"},
          {"dtype", "f32"},
          {"verdict", pass ? "Pass" : "Fail"},
          {"message", message},
          {"metrics", std::move(metrics)},
          {"tolerance", std::move(tolerance)},
          {"repro", repro},
          {"duration_ms", ms}};
}

// What a run is judged against: a trace (exact and cross-vendor tiers) or the
// envelope of several seeds' runs (statistical tier).
struct TrainingReference {
  std::string preset, precision;
  int64_t steps = 0;
  std::optional<ReferenceTrace> trace;
  std::optional<LossEnvelope> envelope;
};

// The loss-curve case against the envelope: its tolerance and extra metrics.
CurveComparison judge_against_envelope(const LossEnvelope& envelope,
                                       const std::vector<double>& loss,
                                       const AlignmentCriteria& criteria, nlohmann::json& tolerance,
                                       nlohmann::json& metrics) {
  const CurveComparison curve = compare_with_envelope(envelope, loss, criteria);
  tolerance.update({{"margin_std", criteria.margin_std},
                    {"margin_atol", criteria.margin_atol},
                    {"allowed_steps_outside", curve.allowed_outside}});
  nlohmann::json seeds = nlohmann::json::array();
  for (const EnvelopeMember& m : envelope.members) seeds.push_back(m.init_seed);
  metrics.update({{"reference_loss", envelope.loss_mean},
                  {"envelope_min", envelope.loss_min},
                  {"envelope_max", envelope.loss_max},
                  {"envelope_std", envelope.loss_std},
                  {"envelope_seeds", seeds}});
  return curve;
}

// The case of a loss curve (and its gradient norms) judged against the
// reference under `criteria`.
nlohmann::json loss_curve_case(const std::string& adapter, const std::string& base,
                               const TrainingReference& reference,
                               const AlignmentCriteria& criteria, const std::vector<double>& loss,
                               const std::vector<double>& grad_norm, const std::string& repro,
                               double ms) {
  nlohmann::json tolerance = {{"tier", criteria.tier}};
  nlohmann::json metrics;
  CurveComparison curve;
  if (reference.envelope) {
    curve = judge_against_envelope(*reference.envelope, loss, criteria, tolerance, metrics);
  } else {
    curve = compare_loss_curves(reference.trace->loss, loss, criteria);
    metrics["reference_loss"] = reference.trace->loss;
    if (criteria.tier == "exact") {
      tolerance["atol"] = criteria.exact_atol;
    } else {
      tolerance.update({{"rtol", criteria.rtol},
                        {"atol", criteria.atol},
                        {"allowed_steps_outside", curve.allowed_outside},
                        {"mean_from_step", criteria.mean_from_step},
                        {"max_mean_relative", criteria.max_mean_relative}});
    }
  }
  metrics.update({{"steps", curve.steps},
                  {"steps_outside", curve.steps_outside},
                  {"first_divergent_step", curve.first_outside_step},
                  {"largest_abs", curve.largest_abs},
                  {"largest_relative", curve.largest_relative},
                  {"largest_step", curve.largest_step},
                  {"mean_relative", curve.mean_relative},
                  {"loss_first", loss.front()},
                  {"loss_last", loss.back()},
                  {"loss", loss},
                  {"grad_norm", grad_norm}});
  return case_record(adapter, fmt::format("{}/loss_curve/{}steps", base, curve.steps), curve.pass,
                     curve.summary, metrics, tolerance, repro, ms);
}

std::string case_base(const TrainingReference& reference) {
  return fmt::format("training/{}/{}", reference.preset, reference.precision);
}

// The step-1 case from the gradient checks (a reference that holds them).
nlohmann::json gradient_case(const std::string& target, const std::string& base,
                             const ReferenceTrace& reference, const ReferenceTrace& run,
                             const TrainConfig& config, double rtol, const std::string& repro) {
  const double direction_rtol = step1_direction_rtol(reference.precision);
  const GradientDiagnosis d =
      diagnose_gradients(reference.gradient_checks, run.gradient_checks,
                         Gpt2ParamLayout(config.model), rtol, direction_rtol);
  nlohmann::json later = nlohmann::json::array();
  for (const auto& l : d.later)
    later.push_back({{"step", l.step}, {"tensor", l.tensor}, {"relative", l.relative}});
  return case_record(
      target, base + "/step1_gradients", d.pass, d.summary,
      {{"first_out_of_bounds", d.first_out.value_or("")},
       {"culprit_tensor", d.culprit},
       {"culprit_op", d.culprit_op},
       {"culprit_relative", std::max(d.culprit_norm_relative, d.culprit_direction_relative)},
       {"culprit_norm_relative", d.culprit_norm_relative},
       {"culprit_direction_relative", d.culprit_direction_relative},
       {"before_clipping", true},
       {"later_steps", later}},
      {{"rtol", rtol}, {"direction_rtol", direction_rtol}, {"atol", kStep1GradAtol}}, repro, 0);
}

// Trains on `target` and judges it; a device that cannot run the workload
// is an adapter error, not a crash of the suite.
conformance::AdapterRun certify_device(const std::string& target,
                                       const TrainingReference& reference,
                                       const TrainConfig& config, const AlignmentCriteria& criteria,
                                       const conformance::CertifyOptions& o,
                                       conformance::Progress& progress) {
  conformance::AdapterRun run;
  run.name = target;
  const auto start = std::chrono::steady_clock::now();
  ReferenceTrace trace;
  try {
    Device device = Runtime::global().device(target);
    nlohmann::json patches = nlohmann::json::array();
    for (const auto& p : Runtime::global().dispatcher().active_patches())
      patches.push_back({{"device_type", p.device_type}, {"op", p.op}, {"origin", p.origin}});
    run.info = {
        {"version", device.api().adapter_version},
        {"abi", fmt::format("{}.{}", POLYCHIP_ABI_VERSION_MAJOR, POLYCHIP_ABI_VERSION_MINOR)},
        {"device_type", device.device_type()},
        {"patches", patches}};
    Stream stream(device);
    HalOps ops(Runtime::global().dispatcher(), stream);
    Trainer trainer(config, ops);
    progress.line(fmt::format("certify: training {} for {} steps ({})", target, reference.steps,
                              device.device_type()));
    trace = record_trace(trainer, reference.preset, reference.steps, device.device_type(),
                         [&](const StepRecord& step) {
                           progress.item(target, static_cast<size_t>(step.step - 1),
                                         static_cast<size_t>(reference.steps),
                                         fmt::format("step {}: loss {:.6g}", step.step, step.loss),
                                         true, "");
                         });
    progress.clear();
  } catch (const Error& e) {
    progress.clear();
    run.fatal = "training on " + target + " failed: " + e.message();
    return run;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  run.seconds = ms / 1000;
  const std::string repro = conformance::repro_environment() + conformance::polychip_command() +
                            " certify --suite training --adapters " + target +
                            (o.reference_path.empty() ? "" : " --reference " + o.reference_path) +
                            (criteria.tier == "cross-vendor" ? "" : " --tier " + criteria.tier);
  const std::string base = case_base(reference);
  run.records.push_back(
      loss_curve_case(target, base, reference, criteria, trace.loss, trace.grad_norm, repro, ms));
  // The step-1 diagnosis needs a trace's per-tensor gradient norms.
  if (!reference.trace) return run;

  const double step1_rtol = step1_grad_rtol(reference.trace->precision);
  if (!reference.trace->gradient_checks.empty()) {
    run.records.push_back(
        gradient_case(target, base, *reference.trace, trace, config, step1_rtol, repro));
    return run;
  }
  const Step1Diagnosis diagnosis =
      diagnose_step1(reference.trace->step1_grad_norms, trace.step1_grad_norms, step1_rtol);
  run.records.push_back(case_record(target, base + "/step1_gradients", diagnosis.pass,
                                    diagnosis.summary,
                                    {{"first_out_of_bounds", diagnosis.first_out.value_or("")},
                                     {"culprit_tensor", diagnosis.culprit},
                                     {"culprit_relative", diagnosis.culprit_relative},
                                     {"common_scale", diagnosis.common_scale},
                                     {"worst_tensor", diagnosis.worst},
                                     {"worst_relative", diagnosis.worst_relative}},
                                    {{"rtol", step1_rtol}, {"atol", kStep1GradAtol}}, repro, 0));
  return run;
}

// The devices together, one data-parallel rank each: the pool's curve is
// judged as one device's (the same global batch is the same mathematics,
// whatever the split).
conformance::AdapterRun certify_pool(const std::vector<std::string>& targets,
                                     const TrainingReference& reference,
                                     const AlignmentCriteria& criteria,
                                     const conformance::CertifyOptions& o,
                                     conformance::Progress& progress) {
  std::string devices, mix;
  for (const std::string& t : targets) {
    devices += (devices.empty() ? "" : ",") + t;
    mix += (mix.empty() ? "" : "+") + t;
  }
  conformance::AdapterRun run;
  run.name = mix;  // as the comm suite names a mix
  progress.line(fmt::format(
      "certify: training {} devices together for {} steps (one data-parallel rank each)",
      targets.size(), reference.steps));
  PoolTrainingRun pool;
  try {
    pool = train_pool({.polychip = o.worker_executable.empty() ? conformance::self_executable()
                                                               : o.worker_executable,
                       .devices = targets,
                       .preset = reference.preset,
                       .precision = reference.precision,
                       .steps = reference.steps});
  } catch (const Error& e) {
    run.fatal = "training " + run.name + " failed: " + e.message();
    return run;
  }
  run.seconds = pool.seconds;
  nlohmann::json ranks = nlohmann::json::array();
  std::string device_types;
  for (size_t r = 0; r < targets.size(); ++r) {
    const std::string type = Runtime::global().device(targets[r]).device_type();
    device_types += (device_types.empty() ? "" : "+") + type;
    ranks.push_back({{"spec", targets[r]}, {"device_type", type}});
    if (r < pool.rows_per_rank.size()) ranks.back()["rows"] = pool.rows_per_rank[r];
  }
  run.info = {{"version", POLYCHIP_VERSION},
              {"abi", fmt::format("{}.{}", POLYCHIP_ABI_VERSION_MAJOR, POLYCHIP_ABI_VERSION_MINOR)},
              {"device_type", device_types},
              {"patches", nlohmann::json::array()},
              {"ranks", ranks}};
  const std::string repro = conformance::repro_environment() + conformance::polychip_command() +
                            " certify --suite training --adapters " + devices +
                            (o.reference_path.empty() ? "" : " --reference " + o.reference_path) +
                            (criteria.tier == "cross-vendor" ? "" : " --tier " + criteria.tier);
  const std::string base = case_base(reference) + "/pool";
  if (pool.exit_code != 0) {
    const size_t tail = pool.output.size() > 2000 ? pool.output.size() - 2000 : 0;
    run.records.push_back(case_record(
        run.name, fmt::format("{}/loss_curve/{}steps", base, reference.steps), false,
        fmt::format("the pool's training job ({}) exited with {}: {}", pool.command, pool.exit_code,
                    pool.output.substr(tail)),
        nlohmann::json::object(), {{"tier", criteria.tier}}, repro, pool.seconds * 1000));
    return run;
  }
  nlohmann::json record = loss_curve_case(run.name, base, reference, criteria, pool.loss,
                                          pool.grad_norm, repro, pool.seconds * 1000);
  record["metrics"].update({{"rows_per_rank", pool.rows_per_rank},
                            {"planner_split", pool.planner_split},
                            {"step_seconds", pool.measured_step_seconds},
                            {"predicted_step_seconds", pool.predicted_step_seconds},
                            {"eta", pool.eta},
                            {"gain", pool.gain}});
  record["message"] = fmt::format(
      "rows per rank {}: {}; {:.3f} s a step (predicted {:.3f}), eta {:.3f}, gain {:.2f}, the "
      "planner's split {}",
      split_text(pool.rows_per_rank), record["message"].get<std::string>(),
      pool.measured_step_seconds, pool.predicted_step_seconds, pool.eta, pool.gain,
      pool.planner_split);
  run.records.push_back(std::move(record));
  return run;
}

}  // namespace

ReferenceTrace shipped_reference_trace() {
  return parse_trace(nlohmann::json::parse(kShippedReferenceTraceJson));
}

LossEnvelope shipped_loss_envelope() {
  return parse_envelope(nlohmann::json::parse(kShippedLossEnvelopeJson));
}

int run_training_certify(const conformance::CertifyOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  // One workload, the reference's steps: the suite has no larger level.
  if (o.level != "quick")
    return usage_error(fmt::format(
        "--level {}: --suite training has one level, quick (it trains as many steps as the "
        "reference holds); standard and full are for --suite precision and --suite comm",
        o.level));
  std::vector<std::string> targets;
  TrainingReference reference;
  TrainConfig config;
  AlignmentCriteria criteria;
  std::string described;
  std::vector<std::string> caveats;
  // A reference recorded on another device (provenance "device") measures
  // agreement with that device, not with NVIDIA.
  auto check_provenance = [&](const std::string& provenance, const std::string& device_type,
                              const char* kind) {
    if (provenance == "device")
      caveats.push_back(fmt::format(
          "the {} {} was recorded on {}, neither NVIDIA hardware nor its emulation: a Pass "
          "shows agreement with that device only",
          kind, o.reference_path, device_type));
  };
  try {
    targets = conformance::resolve_targets(Runtime::global(), o.adapters, true);
    criteria = alignment_criteria(o.tier);
    nlohmann::json workload;
    if (criteria.tier == "statistical") {
      // --reference names an envelope file under this tier.
      const LossEnvelope& e = reference.envelope.emplace(
          o.reference_path.empty() ? shipped_loss_envelope() : read_envelope(o.reference_path));
      reference.preset = e.preset;
      reference.precision = e.precision;
      reference.steps = e.steps();
      workload = e.workload;
      described = fmt::format(
          "{} envelope of {} seeds' runs of the '{}' workload ({}, {} steps) "
          "on {}, {}",
          e.provenance, e.members.size(), e.preset, e.precision, e.steps(), e.device_type,
          e.content_hash);
      check_provenance(e.provenance, e.device_type, "reference envelope");
    } else {
      const ReferenceTrace& t = reference.trace.emplace(
          o.reference_path.empty() ? shipped_reference_trace() : read_trace(o.reference_path));
      reference.preset = t.preset;
      reference.precision = t.precision;
      reference.steps = static_cast<int64_t>(t.loss.size());
      workload = t.workload;
      described =
          fmt::format("{} trace of the '{}' workload ({}, {} steps) on {}, {}", t.provenance,
                      t.preset, t.precision, t.loss.size(), t.device_type, t.content_hash);
      check_provenance(t.provenance, t.device_type, "reference trace");
    }
    config = train_preset(reference.preset);
    config.precision = reference.precision;
    validate(config);
    if (train_config_json(config) != workload)
      throw Error(StatusCode::kInvalidArgument, "the reference's workload differs from preset '" +
                                                    reference.preset +
                                                    "' (it was recorded with changed settings)");
    if (reference.trace) check_step1_tensors(*reference.trace, Gpt2ParamLayout(config.model));
  } catch (const Error& e) {
    return usage_error(e.message());
  }
  std::optional<conformance::RunInProgress> in_progress;
  try {
    in_progress.emplace(o.out_dir);
  } catch (const Error& e) {
    return usage_error(e.message());
  }

  conformance::SuiteRun suite;
  conformance::Progress progress(o.progress);
  for (const std::string& target : targets)
    suite.adapters.push_back(certify_device(target, reference, config, criteria, o, progress));
  if (targets.size() > 1)
    suite.adapters.push_back(certify_pool(targets, reference, criteria, o, progress));
  suite.references = {{"training", described}};
  suite.caveats = caveats;
  suite.run_fields = {{reference.envelope ? "reference_envelope" : "reference_trace",
                       o.reference_path.empty() ? "shipped" : o.reference_path},
                      {"tier", criteria.tier}};
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return conformance::write_and_report(o, conformance::build_results(o, suite, seconds));
}

}  // namespace polychip::training
