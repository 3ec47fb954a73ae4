// The NVIDIA reference: what an NVIDIA GPU (cuBLAS, the CUDA math library,
// PyTorch's CUDA kernels, FlashAttention-2) computes for each op of the
// contract, EMULATED on the CPU, with outputs rounded to their dtypes.
// docs/reference-numerics.md states every assumption and its source.
//
// Results carry a provenance: "emulated" for this emulation; a TraceStore
// (trace_store.hpp) of outputs recorded on real NVIDIA hardware replaces the
// emulation case by case, and its provenance names the device.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "precision/host_tensor.hpp"
#include "reference/trace_store.hpp"

namespace polychip::reference {

using precision::HostTensor;

// A HostOpFn: validates the call against the op contract (Error
// INVALID_ARGUMENT; data errors too), then fills every output with the
// emulated NVIDIA result, rounded to the output's dtype.
void nvidia_reference_run(const OpSpec& op, std::span<const HostTensor> inputs,
                          std::span<HostTensor> outputs, const polychip_op_attrs& attrs);

inline constexpr precision::HostOpFn kNvidiaReference = &nvidia_reference_run;

bool nvidia_reference_supports(std::string_view op_name);

// What reports print next to every NVIDIA-reference number produced by the
// emulation.
inline constexpr std::string_view kEmulatedProvenance =
    "emulated (CPU emulation of NVIDIA GPU numerics, polychip reference/; see "
    "docs/reference-numerics.md)";

// Replays the outputs recorded for `key` when `store` has them (returns the
// store's provenance, "recorded on ..."), else emulates (returns
// kEmulatedProvenance). Recorded outputs must match the outputs' dtypes and
// shapes (else Error DATA_CORRUPTION naming the record).
std::string nvidia_reference_run_or_replay(const TraceStore* store, const TraceKey& key,
                                           const OpSpec& op, std::span<const HostTensor> inputs,
                                           std::span<HostTensor> outputs,
                                           const polychip_op_attrs& attrs);

}  // namespace polychip::reference
