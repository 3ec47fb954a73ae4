// A tensor as kernels see it: a host address, dtype, shape and strides (in
// elements). Adapters build views from their own memory (the cpu adapter
// from plain host memory, the sim adapter from unlocked device pages), so
// every adapter runs the very same kernel code.
#pragma once

#include <cstdint>

#include "polychip/adapter_abi.h"
#include "polychip/dtype.hpp"

namespace polychip::cpu {

struct TensorView {
  char* data = nullptr;  // element [0, ..., 0]
  DType dtype = DType::kF32;
  int rank = 0;
  int64_t shape[POLYCHIP_MAX_RANK] = {};
  int64_t strides[POLYCHIP_MAX_RANK] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= shape[d];
    return n;
  }
  // Dense row-major (size-1 dimensions may have any stride).
  bool is_row_major() const {
    int64_t expect = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (shape[d] != 1 && strides[d] != expect) return false;
      expect *= shape[d];
    }
    return true;
  }
  template <class S>
  S* as() const {
    return reinterpret_cast<S*>(data);
  }
};

// The view of `t` whose element [0, ..., 0] lives at `host_address`.
inline TensorView make_view(const polychip_tensor& t, void* host_address) {
  TensorView v;
  v.data = static_cast<char*>(host_address);
  v.dtype = static_cast<DType>(t.dtype);
  v.rank = t.rank;
  for (int d = 0; d < t.rank && d < POLYCHIP_MAX_RANK; ++d) {
    v.shape[d] = t.shape[d];
    v.strides[d] = t.strides[d];
  }
  return v;
}

}  // namespace polychip::cpu
