// t-way interaction coverage of a case list: per op, which t-tuples of its
// factor values (op_factors.hpp) some case holds. Every case of the list
// counts, the hand-written ones too (classified against the factors); a
// tuple that no allowed case can hold (a declared forbidden pair) is listed
// apart, with its reason, never counted as a hole.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case_spec.hpp"
#include "covering_array.hpp"

namespace polychip::precision {

struct OpInteractionCoverage {
  std::string op;
  int strength = 2;
  size_t factors = 0;
  TupleCoverage tuples;
};

// Every op of the factor registry, in the contract's order.
std::vector<OpInteractionCoverage> interaction_coverage(const std::vector<CaseSpec>& cases,
                                                        int strength);

// One line per op (tuples covered of those required, the first missing
// ones), then the declared invalid combinations with their reasons.
std::string interaction_coverage_table(const std::vector<OpInteractionCoverage>& coverage,
                                       const std::string& title);

// {"strength": t, "ops": {op: {"required", "covered", "forbidden"}}}.
nlohmann::json to_json(const std::vector<OpInteractionCoverage>& coverage);

}  // namespace polychip::precision
