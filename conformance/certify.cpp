#include "certify.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "case_list.hpp"
#include "caveats.hpp"
#include "comm_certify.hpp"
#include "coverage.hpp"
#include "device_targets.hpp"
#include "interaction_coverage.hpp"
#include "polychip/atomic_file.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "precision/oracle/oracle.hpp"
#include "profiles.hpp"
#include "progress.hpp"
#include "references.hpp"
#include "results.hpp"
#include "results_folder.hpp"
#include "supervisor.hpp"
#include "tolerance.hpp"
#include "worker.hpp"
#if POLYCHIP_HAVE_NVIDIA_REFERENCE
#include "trace_recording.hpp"
#endif

namespace polychip::conformance {
namespace {

int usage_error(const std::string& message) {
  fmt::print(stderr, "polychip certify: {}\n", message);
  return 2;
}

// --record-nvidia-trace records one device (a trace is one device's
// outputs) into a file that can be written; refused before anything runs.
int check_trace_recording(const CertifyOptions& o, const std::vector<std::string>& targets) {
  if (o.record_trace_path.empty()) return 0;
#if !POLYCHIP_HAVE_NVIDIA_REFERENCE
  return usage_error("--record-nvidia-trace needs reference/, which this build leaves out");
#endif
  if (targets.size() != 1)
    return usage_error(fmt::format(
        "--record-nvidia-trace records one device, and --adapters gives {} ({}): name one, "
        "e.g. cuda:0",
        targets.size(), fmt::join(targets, ", ")));
  try {
    check_file_destination("--record-nvidia-trace", o.record_trace_path, "the trace file");
  } catch (const Error& e) {
    return usage_error(e.message());
  }
  return 0;
}

// Writes the trace of the one device run; 3 when it cannot be written.
int write_recorded_trace(const CertifyOptions& o, const SuiteRun& suite) {
  if (o.record_trace_path.empty() || suite.adapters.empty()) return 0;
#if POLYCHIP_HAVE_NVIDIA_REFERENCE
  const AdapterRun& run = suite.adapters.front();
  if (run.fatal) return 0;  // reported with the results
  try {
    reference::TraceStore store = recorded_trace(run, POLYCHIP_VERSION);
    store.write(o.record_trace_path);
    const std::string type = run.info.value("device_type", "");
    fmt::print(stderr, "certify: recorded the outputs of {} of {} cases in {}: {}\n", store.size(),
               run.records.size(), o.record_trace_path, store.provenance().to_string());
    if (!type.starts_with("nvidia."))
      fmt::print(stderr,
                 "certify: warning: {}'s device type is {}, not nvidia.*: the trace's "
                 "provenance names it, but it is no NVIDIA reference\n",
                 run.name, type);
  } catch (const Error& e) {
    fmt::print(stderr, "polychip certify: --record-nvidia-trace: {}\n", e.message());
    return 3;
  }
#endif
  return 0;
}

}  // namespace

int run_certify(const CertifyOptions& given) {
  const auto start = std::chrono::steady_clock::now();
  CertifyOptions o = given;
  if (o.adapters.empty())
    return usage_error("--adapters needs at least one adapter or device type");
  if (!(o.timeout_seconds > 0)) return usage_error("--timeout must be > 0 seconds");
  if (o.out_dir.empty() && !o.coverage) {
    o.out_dir = kDefaultOutDir;
    fmt::print(stderr, "certify: no --out given; results go to {}\n",
               std::filesystem::absolute(o.out_dir).string());
  }
  std::vector<std::string> targets;
  try {
    // Every entry resolved before anything is launched: a typo is a usage
    // error now, not a worker or rank group waiting out its timeout.
    targets = resolve_targets(Runtime::global(), o.adapters, o.suite != "comm");
  } catch (const Error& e) {
    return usage_error(e.message());
  }
  if (o.suite == "comm") return run_comm_certify(o);
  if (int refused = check_trace_recording(o, targets)) return refused;
  SuiteRun suite;
  std::vector<precision::CaseSpec> cases;
  CertificationProfile profile;
  std::shared_ptr<const reference::TraceStore> recorded;
  std::vector<precision::ToleranceLoosening> loosened;
  try {
    cases = select_cases(o.suite, o.level, o.case_id, o.ops);
    if (!o.tolerances_path.empty())
      loosened =
          precision::loosened_past_builtin(precision::ToleranceTable::from_file(o.tolerances_path));
    suite.waivers = o.waivers_path.empty() ? precision::WaiverList::builtin()
                                           : precision::WaiverList::from_file(o.waivers_path);
    profile = load_profile(o.profile, "");
    if (!o.nvidia_trace_path.empty()) recorded = read_nvidia_trace(o.nvidia_trace_path);
  } catch (const Error& e) {
    return usage_error(e.message());
  }
  const precision::Coverage coverage = precision::coverage_of(cases, precision::kOracle);
  const int strength = precision::crossing_strength(precision::parse_level(o.level));
  const auto interactions = precision::interaction_coverage(cases, strength);
  if (o.coverage) {
    fmt::print("{}\n{}",
               precision::coverage_table(
                   coverage, fmt::format("coverage of --suite {} --level {} ({} cases)", o.suite,
                                         o.level, cases.size())),
               precision::interaction_coverage_table(
                   interactions,
                   fmt::format("{}-way coverage of each op's factors (op_factors.cpp)", strength)));
    return 0;
  }
  std::optional<RunInProgress> in_progress;
  try {
    in_progress.emplace(o.out_dir);
  } catch (const Error& e) {
    return usage_error(e.message());
  }

  Progress progress(o.progress);
  auto case_done = [&](const std::string& adapter, size_t index, size_t total,
                       const nlohmann::json& record) {
    const std::string verdict = record.value("verdict", "");
    progress.item(adapter, index, total, record.value("id", "") + " " + verdict,
                  verdict == "Pass" || verdict == "NotSupported", record.value("message", ""));
  };

  for (const auto& target : targets) {
    progress.line(fmt::format("certify: {} ({} cases, level {}, profile {})", target, cases.size(),
                              o.level, profile.name));
    const auto adapter_start = std::chrono::steady_clock::now();
    AdapterRun run = run_adapter(target, cases, o, case_done);
    run.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - adapter_start).count();
    progress.clear();
    if (run.usage_error) return usage_error(run.fatal.value_or("unknown adapter"));
    run.partial_support = partial_support(profile, run.records);
    run.missing_required = enforce_profile(profile, run.records);
    suite.adapters.push_back(std::move(run));
  }
  const int trace_status = write_recorded_trace(o, suite);
  suite.references = {{"oracle", "float64 oracle (precision/oracle)"},
                      {"nvidia", nvidia_reference_description(recorded.get(), cases)}};
  suite.run_fields = {{"profile", profile.name},
                      {"coverage", coverage},
                      {"interaction_coverage", precision::to_json(interactions)}};
  if (!o.tolerances_path.empty()) {
    suite.run_fields["tolerances_loosened"] = to_json(loosened);
    if (!loosened.empty())
      suite.caveats.push_back(loosened_tolerances_caveat(o.tolerances_path, loosened));
  }
  for (std::string& caveat : precision_caveats(profile, suite, o.waivers_path))
    suite.caveats.push_back(std::move(caveat));
  if (auto partial = partial_run_caveat(o, cases.size())) suite.caveats.push_back(*partial);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int status = write_and_report(o, build_results(o, suite, seconds));
  return trace_status ? trace_status : status;
}

}  // namespace polychip::conformance
