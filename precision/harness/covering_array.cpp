#include "covering_array.hpp"

#include <algorithm>

#include "polychip/error.hpp"

namespace polychip::precision {
namespace {

bool allowed_beside(const FactorRow& row, size_t f, size_t v, const PairAllowed& allowed) {
  for (size_t g = 0; g < row.size(); ++g) {
    if (g == f || row[g] == kUnknown) continue;
    if (g < f ? !allowed(g, row[g], f, v) : !allowed(f, v, g, row[g])) return false;
  }
  return true;
}

// Whether the factors the row leaves unknown can take values that every
// pair allows (a depth-first search; forbidden pairs are few). Two
// forbidden pairs can rule out a tuple that holds neither: rows = 1 with
// axis0 and row = 1 with the last axis leave no axis for rows = row = 1.
bool completable(FactorRow& row, const std::vector<size_t>& counts, const PairAllowed& allowed,
                 size_t from = 0) {
  size_t f = from;
  while (f < row.size() && row[f] != kUnknown) ++f;
  if (f == row.size()) return true;
  for (size_t v = 0; v < counts[f]; ++v) {
    if (!allowed_beside(row, f, v, allowed)) continue;
    row[f] = v;
    const bool done = completable(row, counts, allowed, f + 1);
    row[f] = kUnknown;
    if (done) return true;
  }
  return false;
}

// The tuples of one choice of t factors, indexed in mixed radix.
struct FactorCombination {
  std::vector<size_t> factors;
  std::vector<char> required;  // no forbidden pair inside
  std::vector<char> covered;
};

class TupleSpace {
 public:
  TupleSpace(const std::vector<size_t>& counts, int strength, const PairAllowed& allowed)
      : counts_(counts) {
    if (counts.empty()) return;
    for (size_t c : counts)
      if (c == 0) throw_error(StatusCode::kInvalidArgument, "a factor without values");
    const size_t t =
        static_cast<size_t>(std::clamp<int>(strength, 1, static_cast<int>(counts.size())));
    std::vector<size_t> pick(t);
    for (size_t i = 0; i < t; ++i) pick[i] = i;
    while (true) {
      add_combination(pick, allowed);
      size_t i = t;  // next combination of t factors, ascending
      while (i > 0 && pick[i - 1] == counts.size() - t + i - 1) --i;
      if (i == 0) break;
      ++pick[i - 1];
      for (size_t j = i; j < t; ++j) pick[j] = pick[j - 1] + 1;
    }
  }

  // Index of the row's tuple in combination c, or kUnknown.
  size_t tuple_index(const FactorCombination& c, const FactorRow& row) const {
    size_t i = 0;
    for (size_t f : c.factors) {
      if (row[f] == kUnknown) return kUnknown;
      i = i * counts_[f] + row[f];
    }
    return i;
  }

  FactorTuple tuple_at(const FactorCombination& c, size_t index) const {
    FactorTuple tuple(c.factors.size());
    for (size_t k = c.factors.size(); k-- > 0;) {
      const size_t f = c.factors[k];
      tuple[k] = {f, index % counts_[f]};
      index /= counts_[f];
    }
    return tuple;
  }

  void cover(const FactorRow& row) {
    for (FactorCombination& c : combinations_) {
      const size_t i = tuple_index(c, row);
      if (i != kUnknown) c.covered[i] = 1;
    }
  }

  std::vector<FactorCombination>& combinations() { return combinations_; }
  const std::vector<size_t>& counts() const { return counts_; }

 private:
  void add_combination(const std::vector<size_t>& factors, const PairAllowed& allowed) {
    FactorCombination c;
    c.factors = factors;
    size_t size = 1;
    for (size_t f : factors) size *= counts_[f];
    c.required.assign(size, 1);
    c.covered.assign(size, 0);
    for (size_t i = 0; i < size; ++i) {
      FactorRow row(counts_.size(), kUnknown);
      bool pairs_allowed = true;
      for (const auto& [f, v] : tuple_at(c, i)) {
        pairs_allowed = pairs_allowed && allowed_beside(row, f, v, allowed);
        row[f] = v;
      }
      c.required[i] = pairs_allowed && completable(row, counts_, allowed);
    }
    combinations_.push_back(std::move(c));
  }

  std::vector<size_t> counts_;
  std::vector<FactorCombination> combinations_;
};

}  // namespace

std::vector<FactorRow> covering_array(const std::vector<size_t>& value_counts, int strength,
                                      const PairAllowed& allowed, std::vector<FactorRow> start) {
  TupleSpace space(value_counts, strength, allowed);
  std::vector<FactorRow> rows = std::move(start);
  for (const FactorRow& row : rows) space.cover(row);
  if (value_counts.empty()) return rows;
  auto& combinations = space.combinations();
  while (true) {
    // The first uncovered required tuple seeds the row.
    FactorRow row(value_counts.size(), kUnknown);
    bool seeded = false;
    for (FactorCombination& c : combinations) {
      for (size_t i = 0; i < c.required.size() && !seeded; ++i) {
        if (!c.required[i] || c.covered[i]) continue;
        for (const auto& [f, v] : space.tuple_at(c, i)) row[f] = v;
        seeded = true;
      }
      if (seeded) break;
    }
    if (!seeded) return rows;
    // Every other factor takes the allowed value that completes the most
    // uncovered tuples among the factors already set; ties rotate with the
    // row number, so the values the tuples leave free still vary.
    for (size_t f = 0; f < value_counts.size(); ++f) {
      if (row[f] != kUnknown) continue;
      size_t best = kUnknown;
      int64_t best_gain = -1;
      for (size_t k = 0; k < value_counts[f]; ++k) {
        const size_t v = (k + rows.size()) % value_counts[f];
        if (!allowed_beside(row, f, v, allowed)) continue;
        row[f] = v;
        if (!completable(row, value_counts, allowed, f + 1)) {
          row[f] = kUnknown;
          continue;
        }
        int64_t gain = 0;
        for (const FactorCombination& c : combinations) {
          if (std::find(c.factors.begin(), c.factors.end(), f) == c.factors.end()) continue;
          const size_t i = space.tuple_index(c, row);
          if (i != kUnknown && c.required[i] && !c.covered[i]) ++gain;
        }
        row[f] = kUnknown;
        if (gain > best_gain) best_gain = gain, best = v;
      }
      row[f] = best;  // (the seed tuple is completable, and each choice keeps it so)
    }
    space.cover(row);
    rows.push_back(std::move(row));
  }
}

TupleCoverage tuple_coverage(const std::vector<size_t>& value_counts, int strength,
                             const std::vector<FactorRow>& rows, const PairAllowed& allowed) {
  TupleSpace space(value_counts, strength, allowed);
  for (const FactorRow& row : rows) space.cover(row);
  TupleCoverage coverage;
  for (const FactorCombination& c : space.combinations())
    for (size_t i = 0; i < c.required.size(); ++i) {
      if (!c.required[i]) {
        ++coverage.forbidden;
        continue;
      }
      ++coverage.required;
      if (c.covered[i])
        ++coverage.covered;
      else
        coverage.missing.push_back(space.tuple_at(c, i));
    }
  return coverage;
}

}  // namespace polychip::precision
