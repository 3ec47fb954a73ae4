// AxisSplit: a tensor seen as [outer, length, inner] around one axis, the
// shape walk of the axis ops (reductions, softmax) in the float64 oracle and
// in the NVIDIA emulation. Header-only so the emulation needs no link
// dependency on the oracle.
#pragma once

#include <cstdint>

#include "polychip/tensor.hpp"

namespace polychip::precision {

struct AxisSplit {
  int64_t outer = 1, length = 1, inner = 1;
  int64_t at(int64_t o, int64_t l, int64_t r) const { return (o * length + l) * inner + r; }
};

// `axis_attr` as the axis attribute holds it: negative counts from the end.
inline AxisSplit split_axis(const Shape& shape, int64_t axis_attr) {
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  AxisSplit s;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < axis)
      s.outer *= shape[d];
    else if (d == axis)
      s.length = shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}

}  // namespace polychip::precision
