// Tensors for op contract tests: row-major views of fake memory handles
// (validate_call only compares handles, it never dereferences them).
#pragma once

#include <cstdint>
#include <vector>

#include "polychip/adapter_abi.h"
#include "polychip/dtype.hpp"

namespace polychip::testing {

inline polychip_tensor tensor(DType d, std::vector<int64_t> shape, polychip_memory* mem,
                              uint64_t offset = 0) {
  polychip_tensor t{};
  t.struct_size = sizeof t;
  t.dtype = static_cast<polychip_dtype>(d);
  t.rank = static_cast<int32_t>(shape.size());
  int64_t s = 1;
  for (int k = t.rank - 1; k >= 0; --k) {
    t.shape[k] = shape[k];
    t.strides[k] = s;
    s *= shape[k];
  }
  t.memory = mem;
  t.byte_offset = offset;
  return t;
}

inline polychip_memory* fake_memory(int i) {
  return reinterpret_cast<polychip_memory*>(0x1000 * i);
}

}  // namespace polychip::testing
