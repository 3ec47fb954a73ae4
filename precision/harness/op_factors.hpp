// The factors of each op: what a vendor kernel branches on (the dtype, a
// loop length past a tile or block, the rank, a strided or broadcast
// layout, each attribute off its default, a value class) with the values
// worth trying, and the combinations that are declared invalid, with the
// reason. The case lists cross them in covering arrays (covering_array.hpp):
// quick reaches every pair of values, standard every triple; `certify
// --coverage` measures the same t-way coverage of a level's cases.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "case_spec.hpp"
#include "covering_array.hpp"

namespace polychip::precision {

// One value of a factor: what it sets in a case, and so how a case is
// recognised as holding it. Exactly one of the four kinds.
struct FactorValue {
  std::string label;           // "bf16", "4097", "strided", "default"
  std::optional<DType> dtype;  // the case's dtype
  int dim = 0;                 // dims[rank + dim] = size (dim < 0: from the end)
  int64_t size = 0;
  std::optional<Shape> leading;     // dims prepended to the op's base shape (rank)
  std::vector<std::string> tokens;  // variant tokens; none: the factor's default
};

struct Factor {
  std::string name;  // "dtype", "D", "layout", "values", an attribute
  std::vector<FactorValue> values;
};

// Two values that never meet in a case, and why.
struct ForbiddenPair {
  std::string factor_a, value_a, factor_b, value_b;
  std::string reason;
};

struct OpFactors {
  std::string op;
  Shape base_dims;  // the shape the factors edit
  std::vector<Factor> factors;
  std::vector<ForbiddenPair> forbidden;
};

// Every op of the contract, in the contract's order.
const std::vector<OpFactors>& op_factor_registry();
// nullptr when the op has no entry.
const OpFactors* find_op_factors(std::string_view op);

std::vector<size_t> value_counts(const OpFactors& op);
PairAllowed allowed_pairs(const OpFactors& op);
// The forbidden pair's reason, or "" when the values may meet.
std::string forbidden_reason(const OpFactors& op, size_t fa, size_t va, size_t fb, size_t vb);

// The case a row of the op's covering array stands for.
CaseSpec case_of_row(const OpFactors& op, const FactorRow& row, uint64_t seed);
// The value of each factor a case holds (kUnknown where it holds none of
// them: a shape the factor does not list).
FactorRow classify_case(const OpFactors& op, const CaseSpec& spec);
// "dtype=bf16, D=4097".
std::string describe_tuple(const OpFactors& op, const FactorTuple& tuple);

}  // namespace polychip::precision
