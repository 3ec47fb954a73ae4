#include "certify.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "comm_certify.hpp"
#include "coverage.hpp"
#include "device_targets.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "precision/oracle/oracle.hpp"
#include "profiles.hpp"
#include "results.hpp"
#include "supervisor.hpp"
#include "tolerance.hpp"
#include "worker.hpp"

namespace polychip::conformance {
namespace {

int usage_error(const std::string& message) {
  fmt::print(stderr, "polychip certify: {}\n", message);
  return 2;
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
  SuiteRun suite;
  std::vector<precision::CaseSpec> cases;
  CertificationProfile profile;
  try {
    cases = select_cases(o.suite, o.level, o.case_id);
    if (!o.tolerances_path.empty()) precision::ToleranceTable::from_file(o.tolerances_path);
    suite.waivers = o.waivers_path.empty() ? precision::WaiverList::builtin()
                                           : precision::WaiverList::from_file(o.waivers_path);
    profile = load_profile(o.profile, "");
  } catch (const Error& e) {
    return usage_error(e.message());
  }
  const precision::Coverage coverage = precision::coverage_of(cases, precision::kOracle);
  if (o.coverage) {
    fmt::print("{}", precision::coverage_table(
                         coverage, fmt::format("coverage of --suite {} --level {} ({} cases)",
                                               o.suite, o.level, cases.size())));
    return 0;
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) return usage_error(fmt::format("cannot create --out '{}': {}", o.out_dir, ec.message()));

  const bool tty = ::isatty(2);
  auto progress = [&](const std::string& adapter, size_t index, size_t total,
                      const nlohmann::json& record) {
    if (!o.progress) return;
    const std::string verdict = record.value("verdict", "");
    const bool quiet = verdict == "Pass" || verdict == "NotSupported";
    if (tty) {
      fmt::print(stderr, "\r\033[K[{} {}/{}] {} {}", adapter, index + 1, total,
                 record.value("id", ""), verdict);
      if (!quiet) fmt::print(stderr, "\n");
    } else if (!quiet) {
      fmt::print(stderr, "[{} {}/{}] {} {}: {}\n", adapter, index + 1, total,
                 record.value("id", ""), verdict, record.value("message", ""));
    }
  };

  for (const auto& target : targets) {
    if (o.progress)
      fmt::print(stderr, "certify: {} ({} cases, level {}, profile {})\n", target, cases.size(),
                 o.level, profile.name);
    const auto adapter_start = std::chrono::steady_clock::now();
    AdapterRun run = run_adapter(target, cases, o, progress);
    run.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - adapter_start).count();
    if (tty && o.progress) fmt::print(stderr, "\r\033[K");
    if (run.usage_error) return usage_error(run.fatal.value_or("unknown adapter"));
    run.missing_required = enforce_profile(profile, run.records);
    suite.adapters.push_back(std::move(run));
  }
  suite.references = {
      {"oracle", "float64 oracle (precision/oracle)"},
      {"nvidia", "NVIDIA emulation on the CPU (reference/): emulated, not measured"}};
  suite.run_fields = {{"profile", profile.name}, {"coverage", coverage}};
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return write_and_report(o, build_results(o, suite, seconds));
}

}  // namespace polychip::conformance
