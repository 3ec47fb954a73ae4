// Validation of index tensors (token ids, targets) before a kernel writes
// anything: an index outside [0, limit) is INVALID_ARGUMENT naming the
// tensor, the position and the value.
#pragma once

#include <string>

#include "kernel_call.hpp"
#include "kernel_error.hpp"

namespace polychip::cpu {

template <class I>
polychip_status check_indices(const char* op, const char* tensor, const I* ids, int64_t count,
                              int64_t limit, const char* limit_name) {
  for (int64_t n = 0; n < count; ++n) {
    const int64_t v = static_cast<int64_t>(ids[n]);
    if (v < 0 || v >= limit)
      return kernel_error(POLYCHIP_INVALID_ARGUMENT,
                          std::string(op) + ": '" + tensor + "'[" + std::to_string(n) + "] = " +
                              std::to_string(v) + " is outside [0, " + std::to_string(limit) +
                              ") (" + limit_name + " = " + std::to_string(limit) + ")");
  }
  return POLYCHIP_OK;
}

}  // namespace polychip::cpu
