// The C ABI's struct_size rules as the cpu and sim adapters apply them: an
// args struct they receive must be there with a plausible struct_size, and a
// struct they fill for the caller is written only as far as the caller's
// struct_size reaches (an older caller's struct is shorter).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#include <fmt/format.h>

#include "polychip/adapter_abi.h"

namespace polychip::cpu {

// INVALID_ARGUMENT naming `call` when `a` is NULL or its struct_size is
// implausible, reported through the adapter's fail(code, message), which
// records its last error.
template <typename Args, typename Fail>
polychip_status check_args_struct(const Args* a, const char* call, Fail&& fail) {
  if (!a) return fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("{}: args is NULL", call));
  const size_t size = a->struct_size;
  if (size < sizeof(size_t) || size > (1u << 16))
    return fail(POLYCHIP_INVALID_ARGUMENT,
                fmt::format("{}: implausible struct_size {}", call, a->struct_size));
  return POLYCHIP_OK;
}

// Copies `filled` into `caller` past struct_size, which stays the caller's;
// INVALID_ARGUMENT naming `call` (through `fail`) when the caller's
// struct_size does not even cover itself (it was not set).
template <typename Struct, typename Fail>
polychip_status write_within_struct_size(const Struct& filled, Struct* caller, const char* call,
                                         Fail&& fail) {
  if (caller->struct_size < sizeof(size_t))
    return fail(POLYCHIP_INVALID_ARGUMENT,
                fmt::format("{}: struct_size {} of the struct to fill is not set", call,
                            caller->struct_size));
  const size_t n = std::min(caller->struct_size, sizeof filled);
  std::memcpy(reinterpret_cast<char*>(caller) + sizeof(size_t),
              reinterpret_cast<const char*>(&filled) + sizeof(size_t), n - sizeof(size_t));
  return POLYCHIP_OK;
}

}  // namespace polychip::cpu
