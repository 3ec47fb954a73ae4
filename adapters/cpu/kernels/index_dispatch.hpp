// Dispatch for kernels that read an index tensor (token ids, targets)
// beside a floating one: both dtypes resolve to compiled types, and every
// index is checked before the kernel body writes anything.
#pragma once

#include <cstddef>
#include <cstdint>

#include "element_types.hpp"
#include "index_check.hpp"
#include "kernel_call.hpp"

namespace polychip::cpu {

// Calls body(S{}, ids), with S the storage type of c[float_slot] and ids the
// c[index_slot] indices (int64_t or int32_t), once the first `count` of them
// lie in [0, limit); otherwise returns check_indices' error. A template, so
// the body compiles inline as if written in the kernel.
template <class Body>
polychip_status visit_float_with_checked_indices(const KernelCall& c, size_t float_slot,
                                                 size_t index_slot, const char* index_name,
                                                 int64_t count, int64_t limit,
                                                 const char* limit_name, Body&& body) {
  return visit_float(c[float_slot].dtype, c.op, [&](auto s) {
    return visit_index(c[index_slot].dtype, c.op, [&](auto i) {
      using I = decltype(i);
      const I* ids = c[index_slot].as<I>();
      if (auto st = check_indices(c.op, index_name, ids, count, limit, limit_name);
          st != POLYCHIP_OK)
        return st;
      body(s, ids);
      return kOk;
    });
  });
}

}  // namespace polychip::cpu
