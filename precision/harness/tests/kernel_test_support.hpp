// Helpers for tests that run precision cases on the cpu adapter and patch
// its kernels (Dispatcher::patch) with deliberately defective ones.
#pragma once

#include <string>

#include "case_runner.hpp"
#include "polychip/hal.hpp"
#include "precision/oracle/oracle.hpp"

namespace polychip::precision::test {

// Element [0, ...] of tensor k of a patched kernel's call, as f32 (the cpu
// adapter's memory is host visible); nullptr when it is not.
inline float* host_f32(const polychip_kernel_args* a, int k) {
  polychip_memory_host_pointer_args h{};
  h.struct_size = sizeof h;
  h.memory = a->tensors[k].memory;
  if (a->adapter->memory_host_pointer(&h) != POLYCHIP_OK) return nullptr;
  return reinterpret_cast<float*>(static_cast<char*>(h.host_pointer) + a->tensors[k].byte_offset);
}

// A context for run_case on `device` with the float64 oracle, the built-in
// tolerances and `waivers`; no NVIDIA reference.
inline CaseContext case_context(Runtime& runtime, const Device& device, const Stream& stream,
                                const WaiverList& waivers, const std::string& adapter) {
  CaseContext ctx;
  ctx.device = device;
  ctx.dispatcher = &runtime.dispatcher();
  ctx.stream = &stream;
  ctx.references.oracle = kOracle;
  ctx.tolerances = &ToleranceTable::builtin();
  ctx.waivers = &waivers;
  ctx.adapter = adapter;
  ctx.repro_prefix = "polychip certify --suite precision --adapters " + adapter + " --case ";
  return ctx;
}

}  // namespace polychip::precision::test
