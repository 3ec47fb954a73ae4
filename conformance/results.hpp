// The results of a certify run as data: results.json (schema
// polychip.results/1, docs/results-schema.md), JUnit XML for CI systems and
// the summary table, all computed from the same JSON document.
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

nlohmann::json build_results(const CertifyOptions& options, const std::vector<AdapterRun>& runs,
                             const precision::WaiverList& waivers, double duration_seconds);

std::string junit_xml(const nlohmann::json& results);

// One row per adapter: counts per verdict and the adapter's verdict, then
// the reproducers of the non-passing cases.
std::string summary_table(const nlohmann::json& results);

}  // namespace polychip::conformance
