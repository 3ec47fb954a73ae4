// benchdnn's MISTRUSTED test: an output whose exact values are nearly all
// one value (zeros, say) cannot tell a right kernel from one that writes
// that value, so a pass on it proves nothing.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

namespace polychip::precision {

struct DominantValue {
  double value;  // NaN when the NaNs dominate
  size_t count;
};

// The value held by more than 90% of `values`, when there are at least 16
// of them; nullopt otherwise. All NaNs count as one value.
std::optional<DominantValue> dominant_value(std::span<const double> values);

}  // namespace polychip::precision
