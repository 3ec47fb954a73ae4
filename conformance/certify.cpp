#include "certify.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "atomic_file.hpp"
#include "comm_certify.hpp"
#include "polychip/error.hpp"
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

int run_certify(const CertifyOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (o.adapters.empty())
    return usage_error("--adapters needs at least one adapter or device type");
  if (o.out_dir.empty()) return usage_error("--out DIR is required");
  if (!(o.timeout_seconds > 0)) return usage_error("--timeout must be > 0 seconds");
  if (o.suite == "comm") return run_comm_certify(o);
  std::vector<precision::CaseSpec> cases;
  precision::WaiverList waivers;
  try {
    cases = select_cases(o.suite, o.level, o.case_id);
    if (!o.tolerances_path.empty()) precision::ToleranceTable::from_file(o.tolerances_path);
    waivers = o.waivers_path.empty() ? precision::WaiverList::builtin()
                                     : precision::WaiverList::from_file(o.waivers_path);
  } catch (const Error& e) {
    return usage_error(e.message());
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

  std::vector<AdapterRun> runs;
  for (const auto& adapter : o.adapters) {
    if (o.progress)
      fmt::print(stderr, "certify: {} ({} cases, level {})\n", adapter, cases.size(), o.level);
    AdapterRun run = run_adapter(adapter, cases, o, progress);
    if (tty && o.progress) fmt::print(stderr, "\r\033[K");
    if (run.usage_error) return usage_error(run.fatal.value_or("unknown adapter"));
    runs.push_back(std::move(run));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json results = build_results(o, runs, waivers, seconds);
  const std::filesystem::path dir(o.out_dir);
  try {
    write_file_atomically((dir / "results.json").string(), results.dump(2) + "\n");
    write_file_atomically((dir / "junit.xml").string(), junit_xml(results));
  } catch (const Error& e) {
    fmt::print(stderr, "polychip certify: {}\n", e.message());
    return 3;
  }
  fmt::print("{}", summary_table(results));
  fmt::print("results: {}  junit: {}  ({:.1f} s)\n", (dir / "results.json").string(),
             (dir / "junit.xml").string(), seconds);
  return results["verdict"] == "Pass" ? 0 : 1;
}

}  // namespace polychip::conformance
