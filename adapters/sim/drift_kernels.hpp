// sim.drift: the cpu kernels, except that weight-gradient gemms accumulate
// in bf16 with truncation. An error that stays out of the precision suite's
// quick cases (they never combine trans_a with K >= 256 in f32) but adds up
// over training (docs/sim-profiles.md, "sim.drift").
#pragma once

#include <span>

#include "kernel_call.hpp"
#include "polychip/op_contract.hpp"
#include "precision/host_tensor.hpp"

namespace polychip::sim {

inline constexpr const char* kDriftDescription =
    "weight-gradient gemms (f32, trans_a, K >= 256) accumulate in bf16, truncating";

// The shortest reduction the drifting gemm applies to: the token count of a
// weight gradient (batch x sequence), longer than quick's transposed cases.
inline constexpr int64_t kDriftMinReduction = 256;

// True for the calls the drift changes: an f32 rank-2 gemm y = alpha a^T b
// (trans_a, not trans_b, beta 0) reducing over K >= kDriftMinReduction.
bool is_drifting_gemm(const cpu::KernelCall& call);

// A HostOpFn for those calls: each output a dot product in K order whose
// running sum is truncated to bf16 (8 significant bits) after every FMA.
void drifting_gemm(const OpSpec& op, std::span<const precision::HostTensor> inputs,
                   std::span<precision::HostTensor> outputs, const polychip_op_attrs& attrs);

}  // namespace polychip::sim
