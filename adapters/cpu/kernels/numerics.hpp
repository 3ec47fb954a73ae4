// Numerical behaviour of a device running the cpu kernels. The cpu adapter
// uses the defaults (faithful); the sim adapter's profiles switch on one
// deliberate defect each (docs/sim-profiles.md), confined to the ops named.
#pragma once

namespace polychip::cpu {

struct Numerics {
  // gemm: every partial sum is rounded to bf16 (all dtypes, all math modes).
  bool gemm_bf16_accumulation = false;
  // exp, log: subnormal inputs and results flushed to zero; results keep
  // only 12 fraction bits (truncated), like a fast hardware approximation.
  bool ftz_fast_exp_log = false;
  // softmax, log_softmax: no max subtraction; exp evaluated in f32 (f64 for
  // f64), so large inputs overflow to Inf/NaN.
  bool softmax_without_max = false;
  // layernorm: variance as E[x^2] - E[x]^2 accumulated in f32 (one pass):
  // catastrophic cancellation when |mean| >> standard deviation.
  bool one_pass_f32_variance = false;
};

}  // namespace polychip::cpu
