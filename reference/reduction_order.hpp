// The summation orders of CUDA reduction kernels, emulated exactly:
//
// strided_tree_reduce(n, lanes, ...): `lanes` threads; thread t folds
// elements t, t + lanes, t + 2 lanes, ... in order into its own partial
// (the grid-stride loop of a block reduction, and the per-thread registers
// of a warp-per-row kernel); then the partials are combined by the warp
// shuffle tree (__shfl_down_sync / __shfl_xor_sync with offsets 16, 8, 4,
// 2, 1: lane i takes lane i + offset), per warp of 32; when there are
// several warps, warp 0 combines the warps' results with the same tree
// (CUB's BlockReduce WARP_REDUCTIONS, PyTorch's cuda_utils BlockReduce).
// For lanes <= 32 the tree starts at offset lanes / 2.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace polychip::reference {

// Shuffle tree over v[0..size), size a power of two <= 32 (in place).
template <typename Acc, typename Combine>
Acc warp_tree(Acc* v, int size, Combine combine) {
  for (int offset = size / 2; offset >= 1; offset /= 2)
    for (int i = 0; i < offset; ++i) v[i] = combine(v[i], v[i + offset]);
  return v[0];
}

// `step(acc, i)` folds element i into a partial; `combine(a, b)` merges two
// partials; `identity` is the empty partial. lanes: a power of two <= 32, or
// a multiple of 32.
template <typename Acc, typename Step, typename Combine>
Acc strided_tree_reduce(int64_t n, int lanes, Acc identity, Step step, Combine combine) {
  std::vector<Acc> part(static_cast<size_t>(lanes), identity);
  for (int64_t i = 0; i < n; ++i) part[i % lanes] = step(part[i % lanes], i);
  if (lanes <= 32) return warp_tree(part.data(), lanes, combine);
  std::vector<Acc> warps(32, identity);
  for (int w = 0; w < lanes / 32; ++w) warps[w] = warp_tree(part.data() + 32 * w, 32, combine);
  return warp_tree(warps.data(), 32, combine);
}

// Threads a warp-per-row kernel (PyTorch's persistent softmax) gives a row
// of n elements: the next power of two, at most 32.
inline int warp_row_lanes(int64_t n) {
  int lanes = 1;
  while (lanes < n && lanes < 32) lanes *= 2;
  return lanes;
}

inline constexpr int kBlockLanes = 256;       // block reductions: 256 threads
inline constexpr int64_t kWarpRowMax = 1024;  // rows up to this use a warp per row

// The lane count for a contiguous row reduction of n elements.
inline int row_lanes(int64_t n) { return n <= kWarpRowMax ? warp_row_lanes(n) : kBlockLanes; }

}  // namespace polychip::reference
