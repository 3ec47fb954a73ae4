#include "dominant_value.hpp"

#include <cmath>
#include <limits>
#include <unordered_map>

namespace polychip::precision {

std::optional<DominantValue> dominant_value(std::span<const double> values) {
  if (values.size() < 16) return std::nullopt;
  const auto dominates = [&](size_t n) { return n * 10 > values.size() * 9; };
  // NaNs are counted apart: as map keys each would be distinct, all in one
  // hash bucket.
  std::unordered_map<double, size_t> counts;
  size_t nans = 0;
  for (double x : values) std::isnan(x) ? ++nans : ++counts[x];
  if (dominates(nans)) return DominantValue{std::numeric_limits<double>::quiet_NaN(), nans};
  for (const auto& [value, n] : counts)
    if (dominates(n)) return DominantValue{value, n};
  return std::nullopt;
}

}  // namespace polychip::precision
