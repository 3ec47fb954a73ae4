#include "caveats.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "polychip/op_contract.hpp"

namespace polychip::conformance {
namespace {

// A caveat names the first few of its items and counts the rest;
// results.json has them all.
std::string first_few(const std::vector<std::string>& items) {
  constexpr size_t kNamed = 4;
  const std::vector<std::string> named(
      items.begin(), items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), kNamed)));
  return fmt::format(
      "{}{}", fmt::join(named, ", "),
      items.size() > kNamed ? fmt::format(" and {} more", items.size() - kNamed) : "");
}

std::string plural(size_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

// "cpu: exp f32 (3 cases)" per adapter and pair, in run order.
std::vector<std::string> per_pair(const std::map<std::string, std::map<std::string, size_t>>& by,
                                  const std::vector<std::string>& adapter_order) {
  std::vector<std::string> out;
  for (const auto& adapter : adapter_order) {
    const auto it = by.find(adapter);
    if (it == by.end()) continue;
    for (const auto& [pair, n] : it->second)
      out.push_back(fmt::format("{}: {} ({})", adapter, pair, plural(n, "case")));
  }
  return out;
}

std::string pair_of(const nlohmann::json& record) {
  return record.value("op", "") + " " + record.value("dtype", "");
}

std::vector<std::string> adapter_names(const SuiteRun& suite) {
  std::vector<std::string> names;
  for (const auto& run : suite.adapters) names.push_back(run.name);
  return names;
}

// A profile that certifies nothing; it names the NotSupported cases that
// the default profile would fail.
std::optional<std::string> profile_caveat(const CertificationProfile& profile,
                                          const SuiteRun& suite) {
  if (profile.certifies) return std::nullopt;
  const CertificationProfile certifying = load_profile("", "");
  std::map<std::string, std::map<std::string, size_t>> refused;
  size_t count = 0;
  for (const auto& run : suite.adapters)
    for (const auto& r : run.records)
      if (r.value("verdict", "") == "NotSupported" &&
          certifying.requires_pair(r.value("op", ""), r.value("dtype", ""))) {
        ++refused[run.name][pair_of(r)];
        ++count;
      }
  std::string caveat =
      fmt::format("profile '{}' ({}) is not a certification: certify under profile '{}' for one",
                  profile.name, profile.description, certifying.name);
  if (count > 0)
    caveat += fmt::format(", which requires what {} refused here as NotSupported: {}",
                          count == 1 ? "1 case" : fmt::format("{} cases", count),
                          first_few(per_pair(refused, adapter_names(suite))));
  return caveat;
}

// Failures that a waiver turned into Waived: all of a vendor's file's, the
// expected failures (known bugs) of the built-in file.
std::optional<std::string> waived_caveat(const SuiteRun& suite, const std::string& waivers_path) {
  std::map<std::string, std::map<std::string, size_t>> waived;
  size_t count = 0, expected_failures = 0;
  for (const auto& run : suite.adapters)
    for (const auto& r : run.records) {
      if (r.value("verdict", "") != "Waived") continue;
      const bool expected_failure =
          r.value("waiver", nlohmann::json::object()).value("kind", "") == "expected_failure";
      if (waivers_path.empty() && !expected_failure) continue;  // polychip's accepted exception
      ++waived[run.name][pair_of(r)];
      ++count;
      expected_failures += expected_failure;
    }
  if (count == 0) return std::nullopt;
  const std::string pairs = first_few(per_pair(waived, adapter_names(suite)));
  if (waivers_path.empty())
    return fmt::format(
        "{} failing {} Waived as expected failures (known bugs) of polychip's built-in waivers: "
        "{} (cases[].waiver)",
        count, count == 1 ? "case is" : "cases are", pairs);
  return fmt::format(
      "the waivers of {} turn {} into Waived ({} of them expected failures, known bugs): {} "
      "(cases[].waiver, waivers[].cases_waived)",
      waivers_path, plural(count, "failing case"), expected_failures, pairs);
}

// Waivers of a vendor's file that waive every case of a pair the profile
// requires, used or not: whatever that pair's kernels give, it passes.
std::optional<std::string> blanket_waiver_caveat(const CertificationProfile& profile,
                                                 const SuiteRun& suite,
                                                 const std::string& waivers_path) {
  if (waivers_path.empty()) return std::nullopt;
  std::set<std::string> dtypes;
  for (const auto& r : profile.required) dtypes.insert(r.dtypes.begin(), r.dtypes.end());
  std::vector<std::string> blanket;
  for (const auto& run : suite.adapters) {
    const auto applying = suite.waivers.for_adapter(run.name, run.info.value("device_type", ""));
    for (const OpSpec& op : op_contract())
      for (const auto& dtype : dtypes) {
        const std::string name(op.name);
        if (!profile.requires_pair(name, dtype)) continue;
        for (const auto& w : applying)
          if (precision::waives_every_case_of(w, name, dtype)) {
            blanket.push_back(fmt::format("{}: {} {}", run.name, name, dtype));
            break;
          }
      }
  }
  if (blanket.empty()) return std::nullopt;
  return fmt::format(
      "the waivers of {} waive every case, whatever its result, of {} that profile '{}' "
      "requires: {} (waivers[]); those pairs are not certified",
      waivers_path, plural(blanket.size(), "op x dtype pair"), profile.name, first_few(blanket));
}

}  // namespace

std::string loosened_tolerances_caveat(const std::string& path,
                                       const std::vector<precision::ToleranceLoosening>& loosened) {
  std::vector<std::string> bounds;
  for (const auto& l : loosened)
    bounds.push_back(fmt::format("{} {} ({})", l.op, dtype_name(l.dtype), l.change));
  return fmt::format(
      "the tolerances of {} loosen {} op x dtype bound{} past polychip's built-in ones: {} "
      "(run.tolerances_loosened)",
      path, loosened.size(), loosened.size() == 1 ? "" : "s", first_few(bounds));
}

std::optional<std::string> partial_run_caveat(const CertifyOptions& options, size_t cases_run) {
  if (options.case_id)
    return fmt::format(
        "a partial run: only the case given by --case ran ({}), not every case of level {}; "
        "certify the whole level for a certification",
        *options.case_id, options.level);
  if (!options.ops.empty())
    return fmt::format(
        "a partial run: only the {} of op{} {} (--ops) ran, not every case of level {}; "
        "certify the whole level for a certification",
        plural(cases_run, "case"), options.ops.size() == 1 ? "" : "s", fmt::join(options.ops, ", "),
        options.level);
  return std::nullopt;
}

std::vector<std::string> precision_caveats(const CertificationProfile& profile,
                                           const SuiteRun& suite, const std::string& waivers_path) {
  std::vector<std::string> caveats;
  for (const auto& caveat : {profile_caveat(profile, suite), waived_caveat(suite, waivers_path),
                             blanket_waiver_caveat(profile, suite, waivers_path)})
    if (caveat) caveats.push_back(*caveat);
  return caveats;
}

}  // namespace polychip::conformance
