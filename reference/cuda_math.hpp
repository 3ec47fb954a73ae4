// CUDA math-library behaviour for the emulation, and NVIDIA's documented
// accuracy of each function (CUDA C++ Programming Guide, appendix
// "Mathematical Functions": maximum ulp error against the correctly rounded
// result, from extensive but not exhaustive tests).
//
// The emulation computes each function in double and rounds once to float:
// a correctly rounded result, which is always within NVIDIA's documented
// bound. So the emulated NVIDIA error on elementwise math is a lower bound of
// the real GPU's; reports say so and quote the documented bound alongside.
#pragma once

#include <cmath>
#include <optional>
#include <span>
#include <string_view>

#include "polychip/dtype.hpp"

namespace polychip::reference {

// The CUDA functions the emulated kernels call, overloaded like CUDA's
// float and double versions. Float: computed in double and rounded once, so
// correctly rounded (except in rare double-rounding cases, far inside the
// documented bound). Double: the host libm (glibc: < 1 ulp), within CUDA's
// documented double bounds.
inline float cuda_exp(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }
inline float cuda_log(float x) { return static_cast<float>(std::log(static_cast<double>(x))); }
inline float cuda_tanh(float x) { return static_cast<float>(std::tanh(static_cast<double>(x))); }
inline float cuda_erf(float x) { return static_cast<float>(std::erf(static_cast<double>(x))); }
inline float cuda_sqrt(float x) { return std::sqrt(x); }  // IEEE, as -prec-sqrt=true
inline float cuda_rsqrt(float x) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x)));
}
inline double cuda_exp(double x) { return std::exp(x); }
inline double cuda_log(double x) { return std::log(x); }
inline double cuda_tanh(double x) { return std::tanh(x); }
inline double cuda_erf(double x) { return std::erf(x); }
inline double cuda_sqrt(double x) { return std::sqrt(x); }
inline double cuda_rsqrt(double x) { return 1.0 / std::sqrt(x); }

// One row of NVIDIA's table.
struct CudaMathBound {
  std::string_view function;  // "expf", "exp", "x/y", ...
  bool double_precision;
  double max_ulp;
  std::string_view condition;  // e.g. "-prec-div=true (nvcc default)"
};
// The rows polychip's ops depend on.
std::span<const CudaMathBound> cuda_math_bounds();
const CudaMathBound* find_cuda_math_bound(std::string_view function);

// The documented bound that applies to an elementwise op of the contract in
// a compute dtype: the CUDA function the kernel calls (float functions for
// f32/f16/bf16, double ones for f64) and its bound as documented (ulps from
// the correctly rounded result). `max_ulp_output` converts it to what the
// harness measures: ulps of the op's output dtype from the EXACT result —
// documented + 0.5 for f32/f64; for f16/bf16 (computed in float, rounded
// once) 0.5 plus the float error expressed in 16-bit ulps.
struct OpUlpBound {
  std::string_view cuda_function;
  double max_ulp_function;
  double max_ulp_output;
  std::string_view source;
};
// nullopt for ops with no single documented function (composites such as
// sigmoid or gelu, reductions, gemm).
std::optional<OpUlpBound> documented_ulp_bound(std::string_view op, DType dtype);

inline constexpr std::string_view kCudaMathSource =
    "CUDA C++ Programming Guide, appendix Mathematical Functions (Standard Functions: "
    "single- and double-precision maximum ulp error tables)";

}  // namespace polychip::reference
