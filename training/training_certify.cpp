#include "training_certify.hpp"

#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "alignment.hpp"
#include "checkpoint.hpp"
#include "device_targets.hpp"
#include "hal_ops.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "results.hpp"
#include "worker.hpp"

namespace polychip::training {

extern const char* const kShippedReferenceTraceJson;

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

// Trains on `target` and judges it; a device that cannot run the workload
// is an adapter error, not a crash of the suite.
conformance::AdapterRun certify_device(const std::string& target, const ReferenceTrace& reference,
                                       const TrainConfig& config, const AlignmentCriteria& criteria,
                                       const conformance::CertifyOptions& o) {
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
    if (o.progress)
      fmt::print(stderr, "certify: training {} for {} steps ({})\n", target, reference.loss.size(),
                 device.device_type());
    trace = record_trace(trainer, reference.preset, static_cast<int64_t>(reference.loss.size()),
                         device.device_type());
  } catch (const Error& e) {
    run.fatal = "training on " + target + " failed: " + e.message();
    return run;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  run.seconds = ms / 1000;
  const std::string repro = conformance::repro_environment() +
                            "polychip certify --suite training --adapters " + target +
                            (o.reference_path.empty() ? "" : " --reference " + o.reference_path) +
                            (criteria.tier == "cross-vendor" ? "" : " --tier " + criteria.tier);
  const std::string base = fmt::format("training/{}/{}", reference.preset, reference.precision);

  const CurveComparison curve = compare_loss_curves(reference.loss, trace.loss, criteria);
  nlohmann::json tolerance = {{"tier", criteria.tier}};
  if (criteria.tier == "exact") {
    tolerance["atol"] = criteria.exact_atol;
  } else {
    tolerance.update({{"rtol", criteria.rtol},
                      {"atol", criteria.atol},
                      {"allowed_steps_outside", curve.allowed_outside},
                      {"mean_from_step", criteria.mean_from_step},
                      {"max_mean_relative", criteria.max_mean_relative}});
  }
  run.records.push_back(case_record(target, fmt::format("{}/loss_curve/{}steps", base, curve.steps),
                                    curve.pass, curve.summary,
                                    {{"steps", curve.steps},
                                     {"steps_outside", curve.steps_outside},
                                     {"first_divergent_step", curve.first_outside_step},
                                     {"largest_abs", curve.largest_abs},
                                     {"largest_relative", curve.largest_relative},
                                     {"largest_step", curve.largest_step},
                                     {"mean_relative", curve.mean_relative},
                                     {"loss_first", trace.loss.front()},
                                     {"loss_last", trace.loss.back()},
                                     {"loss", trace.loss},
                                     {"reference_loss", reference.loss},
                                     {"grad_norm", trace.grad_norm}},
                                    tolerance, repro, ms));

  const Step1Diagnosis diagnosis =
      diagnose_step1(reference.step1_grad_norms, trace.step1_grad_norms);
  run.records.push_back(
      case_record(target, base + "/step1_gradients", diagnosis.pass, diagnosis.summary,
                  {{"first_out_of_bounds", diagnosis.first_out.value_or("")},
                   {"worst_tensor", diagnosis.worst},
                   {"worst_relative", diagnosis.worst_relative}},
                  {{"rtol", kStep1GradRtol}, {"atol", kStep1GradAtol}}, repro, 0));
  return run;
}

}  // namespace

ReferenceTrace shipped_reference_trace() {
  return parse_trace(nlohmann::json::parse(kShippedReferenceTraceJson));
}

int run_training_certify(const conformance::CertifyOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> targets;
  ReferenceTrace reference;
  TrainConfig config;
  AlignmentCriteria criteria;
  try {
    targets = conformance::resolve_targets(Runtime::global(), o.adapters, true);
    reference = o.reference_path.empty() ? shipped_reference_trace() : read_trace(o.reference_path);
    criteria = alignment_criteria(o.tier);
    config = train_preset(reference.preset);
    if (train_config_json(config) != reference.workload)
      throw Error(StatusCode::kInvalidArgument,
                  "the reference trace's workload differs from preset '" + reference.preset +
                      "' (it was recorded with changed settings)");
  } catch (const Error& e) {
    return usage_error(e.message());
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) return usage_error(fmt::format("cannot create --out '{}': {}", o.out_dir, ec.message()));

  conformance::SuiteRun suite;
  for (const std::string& target : targets)
    suite.adapters.push_back(certify_device(target, reference, config, criteria, o));
  suite.references = {
      {"training",
       fmt::format("{} trace of the '{}' workload ({}, {} steps) on {}, {}", reference.provenance,
                   reference.preset, reference.precision, reference.loss.size(),
                   reference.device_type, reference.content_hash)}};
  suite.run_fields = {{"reference_trace", o.reference_path.empty() ? "shipped" : o.reference_path},
                      {"tier", criteria.tier}};
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return conformance::write_and_report(o, conformance::build_results(o, suite, seconds));
}

}  // namespace polychip::training
