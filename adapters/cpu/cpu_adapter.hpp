// The cpu adapter: the reference device. Memory is plain host memory (host
// visible), streams execute work synchronously in submission order (work is
// complete when the enqueuing call returns), events record timestamps.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "polychip/adapter_abi.h"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);

namespace polychip::cpu {

// What a cpu polychip_memory* points to.
struct Memory {
  void* data;
  uint64_t size;
  polychip_memory_kind kind;
};

inline Memory* as_memory(polychip_memory* m) { return reinterpret_cast<Memory*>(m); }

// Host address of element [0,...,0] of a cpu tensor.
inline void* tensor_data(const polychip_tensor& t) {
  return t.memory ? static_cast<char*>(as_memory(t.memory)->data) + t.byte_offset : nullptr;
}

// Records `message` as this thread's last error (what the adapter's
// last_error_message() returns) and returns `code`: kernels end with
// `return fail(POLYCHIP_INVALID_ARGUMENT, "...")`.
polychip_status fail(polychip_status code, std::string message);

// The cpu adapter's kernels (adapters/cpu/kernels/kernel_table.cpp).
std::span<const polychip_kernel_entry> kernel_entries();

}  // namespace polychip::cpu
