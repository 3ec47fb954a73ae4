#include "interaction_coverage.hpp"

#include <map>

#include <fmt/format.h>

#include "op_factors.hpp"

namespace polychip::precision {

std::vector<OpInteractionCoverage> interaction_coverage(const std::vector<CaseSpec>& cases,
                                                        int strength) {
  std::map<std::string, std::vector<FactorRow>> rows;
  for (const CaseSpec& spec : cases)
    if (const OpFactors* op = find_op_factors(spec.op))
      rows[spec.op].push_back(classify_case(*op, spec));
  std::vector<OpInteractionCoverage> out;
  for (const OpFactors& op : op_factor_registry())
    out.push_back({op.op, strength, op.factors.size(),
                   tuple_coverage(value_counts(op), strength, rows[op.op], allowed_pairs(op))});
  return out;
}

std::string interaction_coverage_table(const std::vector<OpInteractionCoverage>& coverage,
                                       const std::string& title) {
  constexpr size_t kMissingShown = 3;
  std::string out = title + "\n" +
                    fmt::format("{:<24} {:>7}  {:>15}  {:>9}  {}\n", "op", "factors",
                                "tuples covered", "invalid", "missing");
  int64_t required = 0, covered = 0;
  for (const OpInteractionCoverage& c : coverage) {
    const OpFactors& op = *find_op_factors(c.op);
    std::string missing;
    for (size_t i = 0; i < c.tuples.missing.size() && i < kMissingShown; ++i)
      missing += fmt::format("{}({})", i ? "; " : "", describe_tuple(op, c.tuples.missing[i]));
    if (c.tuples.missing.size() > kMissingShown)
      missing += fmt::format("; ... {} more", c.tuples.missing.size() - kMissingShown);
    out += fmt::format("{:<24} {:>7}  {:>7}/{:<7}  {:>9}  {}\n", c.op, c.factors, c.tuples.covered,
                       c.tuples.required, c.tuples.forbidden, missing.empty() ? "-" : missing);
    required += c.tuples.required;
    covered += c.tuples.covered;
  }
  const int strength = coverage.empty() ? 0 : coverage.front().strength;
  out += fmt::format(
      "{}-way: {} of {} value tuples covered across {} ops ({:.1f}%)\n", strength, covered,
      required, coverage.size(),
      required ? 100.0 * static_cast<double>(covered) / static_cast<double>(required) : 100.0);
  out += "declared invalid combinations (tuples holding one are not required):\n";
  for (const OpInteractionCoverage& c : coverage)
    for (const ForbiddenPair& p : find_op_factors(c.op)->forbidden)
      out += fmt::format("  {:<22} {}={} with {}={}: {}\n", c.op, p.factor_a, p.value_a, p.factor_b,
                         p.value_b, p.reason);
  return out;
}

nlohmann::json to_json(const std::vector<OpInteractionCoverage>& coverage) {
  nlohmann::json ops = nlohmann::json::object();
  for (const OpInteractionCoverage& c : coverage)
    ops[c.op] = {{"required", c.tuples.required},
                 {"covered", c.tuples.covered},
                 {"forbidden", c.tuples.forbidden}};
  return {{"strength", coverage.empty() ? 0 : coverage.front().strength}, {"ops", ops}};
}

}  // namespace polychip::precision
