// Block-wide reductions through shared memory in a fixed tree order, so a
// result never depends on timing (and never on the warp size).
#pragma once

#include "numeric.cuh"

struct pc_sum_op {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return a + b;
  }
};
// NaN-propagating maximum: NaN wins, so reduce_max of a row with NaN is NaN.
struct pc_max_op {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    if (a != a) return a;
    if (b != b) return b;
    return a > b ? a : b;
  }
};

// Every thread of the block passes its partial value; every thread gets the
// total. `scratch` holds blockDim.x values; blockDim.x must be a power of
// two (launches use PC_BLOCK_THREADS).
template <typename A, typename Op>
PC_DEVICE A pc_block_reduce(A value, A* scratch, Op op) {
  const unsigned t = threadIdx.x;
  scratch[t] = value;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) scratch[t] = op(scratch[t], scratch[t + s]);
    __syncthreads();
  }
  A total = scratch[0];
  __syncthreads();
  return total;
}

// The infinity of the accumulation type, for max reductions.
template <typename A>
PC_DEVICE A pc_neg_inf() {
  return static_cast<A>(-__longlong_as_double(0x7ff0000000000000ll));
}

// One instantiation of a kernel template per storage dtype, with C names
// <name>_f64 ... <name>_bf16 (the host looks them up by these names).
#define PC_FOR_EACH_FLOAT(X) X(f64, double) X(f32, float) X(f16, pc_f16) X(bf16, pc_bf16)
