// The coverage model: per op, the critical points a level must reach — every
// f32/f16/bf16 dtype of the op, every attribute at a non-default value, and,
// for ops that loop over a row, a row of a real model's length (>= 4,096) —
// and how many cases of a case list reach each (0 is a hole).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "case_spec.hpp"
#include "precision/host_tensor.hpp"

namespace polychip::precision {

// op -> critical point ("dtype:bf16", "attr:eps", "row:>=4096") -> cases.
using Coverage = std::map<std::string, std::map<std::string, int>>;

// Every op of the contract, with every point of its model (count 0 where no
// case reaches it). `oracle` builds the problems (derived inputs).
Coverage coverage_of(const std::vector<CaseSpec>& cases, HostOpFn oracle);

// "op: point, point" for each hole; empty when every point is covered.
std::vector<std::string> coverage_holes(const Coverage& coverage);

// One line per op: points covered of its model, the holes, the point the
// fewest cases reach; then a total line.
std::string coverage_table(const Coverage& coverage, const std::string& title);

}  // namespace polychip::precision
