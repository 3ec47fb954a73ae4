// The results of a certify run as data: results.json (schema
// polychip.results/1, docs/results-schema.md, docs/results.schema.json),
// JUnit XML for CI systems and the summary table, all computed from the same
// JSON document. Every suite goes through this one writer: a suite holds a
// RunInProgress (results_folder.hpp) from its first case, turns its outcome
// into a SuiteRun and calls build_results + write_and_report.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "certify_options.hpp"
#include "supervisor.hpp"
#include "waivers.hpp"

namespace polychip::conformance {

inline constexpr const char* kResultsSchema = "polychip.results/1";

// host, os, cpu, polychip version, git commit (when known), time (UTC).
nlohmann::json environment_json();

// What a suite hands the writer.
struct SuiteRun {
  std::vector<AdapterRun> adapters;  // one entry per certified device (comm: per mix)
  precision::WaiverList waivers;     // the waiver file in force (empty: none)
  nlohmann::json references;         // what the verdicts are measured against
  nlohmann::json run_fields = nlohmann::json::object();  // suite-specific fields of `run`
  // What the verdict stands on that is not polychip's own (tolerances
  // loosened past the built-in ones, a reference that is not NVIDIA's), one
  // sentence each: a verdict with caveats is not a polychip certification.
  std::vector<std::string> caveats;
};

nlohmann::json build_results(const CertifyOptions& options, const SuiteRun& suite,
                             double duration_seconds);

// Prints the summary table, writes DIR/results.json and DIR/junit.xml as a
// pair (write_results_pair) and says where they went, or, when they cannot
// be written, why, and that DIR holds neither; returns certify's exit code
// (0 pass, 1 fail, 3 the files could not be written).
int write_and_report(const CertifyOptions& options, const nlohmann::json& results);

std::string junit_xml(const nlohmann::json& results);

// One row per adapter: counts per verdict and the adapter's verdict, then
// the reproducers of the non-passing cases.
std::string summary_table(const nlohmann::json& results);

}  // namespace polychip::conformance
