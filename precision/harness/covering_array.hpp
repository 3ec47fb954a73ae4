// Covering arrays (NIST's combinatorial testing): rows of factor values
// such that every t-tuple of values of any t factors appears in some row,
// except tuples that hold a declared forbidden pair. Interaction faults
// (a reduced-precision path only on long rows, a batched path only with a
// transpose) need two or three factors at the right values at once; a
// strength-t array reaches every such combination of t factors in far
// fewer rows than the full product.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace polychip::precision {

// A row: one value index per factor; kUnknown where a row says nothing
// about a factor (a hand-written case classified against the factors).
using FactorRow = std::vector<size_t>;
constexpr size_t kUnknown = std::numeric_limits<size_t>::max();

// Whether value va of factor fa may appear with value vb of factor fb
// (fa < fb). A tuple no row of allowed pairs can hold is not required.
using PairAllowed = std::function<bool(size_t fa, size_t va, size_t fb, size_t vb)>;

// A deterministic greedy strength-t covering array (AETG's rule: each row
// starts from the first uncovered tuple and takes, factor by factor, the
// value that covers the most uncovered tuples; every pair in a row is
// allowed). strength is clamped to the number of factors; every factor
// needs at least one value. The array starts with `start` (e.g. a
// lower-strength array, so a level's cases extend the level below's).
std::vector<FactorRow> covering_array(const std::vector<size_t>& value_counts, int strength,
                                      const PairAllowed& allowed,
                                      std::vector<FactorRow> start = {});

// A t-tuple: (factor, value) pairs, factors ascending.
using FactorTuple = std::vector<std::pair<size_t, size_t>>;

struct TupleCoverage {
  int64_t required = 0;   // tuples some allowed row can hold
  int64_t covered = 0;    // of those, tuples some row holds
  int64_t forbidden = 0;  // tuples no allowed row holds (a forbidden pair, or pairs combined)
  std::vector<FactorTuple> missing;  // required and not covered
};

// Which of the strength-t tuples `rows` cover.
TupleCoverage tuple_coverage(const std::vector<size_t>& value_counts, int strength,
                             const std::vector<FactorRow>& rows, const PairAllowed& allowed);

}  // namespace polychip::precision
