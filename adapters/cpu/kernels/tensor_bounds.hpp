// Whether a tensor's elements lie inside its memory: adapters check this
// before a kernel touches memory, so a bad view is an error, not a crash.
#pragma once

#include <cstdint>
#include <string>

#include "polychip/adapter_abi.h"
#include "polychip/dtype.hpp"

namespace polychip::cpu {

// "" when every element of `t` lies in [0, memory_size) bytes, otherwise a
// message naming tensor number `index`.
inline std::string check_tensor_bounds(const polychip_tensor& t, uint64_t memory_size, int index) {
  if (t.rank < 0 || t.rank > POLYCHIP_MAX_RANK || !is_valid_dtype(t.dtype))
    return "tensor " + std::to_string(index) + " has an invalid rank or dtype";
  uint64_t last = 0;
  for (int d = 0; d < t.rank; ++d) {
    if (t.shape[d] == 0) return "";  // empty: touches nothing
    if (t.shape[d] < 0 || t.strides[d] < 0)
      return "tensor " + std::to_string(index) + " has a negative size or stride";
    uint64_t span;
    if (__builtin_mul_overflow(static_cast<uint64_t>(t.shape[d] - 1),
                               static_cast<uint64_t>(t.strides[d]), &span) ||
        __builtin_add_overflow(last, span, &last))
      return "tensor " + std::to_string(index) + " spans more than 2^64 elements";
  }
  const uint64_t es = dtype_size(static_cast<DType>(t.dtype));
  uint64_t end;
  if (__builtin_mul_overflow(last + 1, es, &end) ||
      __builtin_add_overflow(end, t.byte_offset, &end) || end > memory_size)
    return "tensor " + std::to_string(index) + " reaches byte " + std::to_string(end) +
           " but its memory holds " + std::to_string(memory_size) + " bytes";
  return "";
}

}  // namespace polychip::cpu
