// Visits every element index of a shape, giving the element offset of each
// of N tensors (their own strides, 0 = broadcast). Row-major tensors take a
// flat loop; others an odometer over the outer dimensions with a strided
// innermost loop. The visiting order is always row-major (deterministic).
#pragma once

#include <array>
#include <cstdint>

#include "tensor_view.hpp"

namespace polychip::cpu {

template <size_t N, class F>
void for_each_offset(int rank, const int64_t* shape, const std::array<const int64_t*, N>& strides,
                     F&& f) {
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= shape[d];
  if (total == 0) return;

  bool dense = true;
  for (size_t k = 0; k < N && dense; ++k) {
    int64_t expect = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (shape[d] != 1 && strides[k][d] != expect) dense = false;
      expect *= shape[d];
    }
  }
  std::array<int64_t, N> off{};
  if (dense) {
    for (int64_t i = 0; i < total; ++i) {
      off.fill(i);
      f(off);
    }
    return;
  }
  if (rank == 0) {
    f(off);
    return;
  }
  const int last = rank - 1;
  const int64_t inner = shape[last];
  int64_t index[POLYCHIP_MAX_RANK] = {};
  std::array<int64_t, N> base{};
  for (;;) {
    off = base;
    for (int64_t j = 0; j < inner; ++j) {
      f(off);
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][last];
    }
    int d = last - 1;
    for (; d >= 0; --d) {
      ++index[d];
      for (size_t k = 0; k < N; ++k) base[k] += strides[k][d];
      if (index[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// The offsets of views that all have the first one's shape.
template <class F, class... Views>
void for_each_element(F&& f, const TensorView& first, const Views&... rest) {
  for_each_offset<1 + sizeof...(Views)>(first.rank, first.shape, {first.strides, rest.strides...},
                                        f);
}

}  // namespace polychip::cpu
