#include "reference/cuda_math.hpp"

#include <array>

namespace polychip::reference {
namespace {

constexpr std::string_view kDefault = "full range";

constexpr std::array kBounds = {
    CudaMathBound{"x+y", false, 0, "IEEE-754 round to nearest even"},
    CudaMathBound{"x*y", false, 0, "IEEE-754 round to nearest even"},
    CudaMathBound{"x/y", false, 0, "-prec-div=true (nvcc default; 2 ulp with -prec-div=false)"},
    CudaMathBound{"fmaf", false, 0, "IEEE-754 fused multiply-add"},
    CudaMathBound{"sqrtf", false, 0, "-prec-sqrt=true (nvcc default; 1 ulp otherwise)"},
    CudaMathBound{"rsqrtf", false, 2, kDefault},
    CudaMathBound{"expf", false, 2, kDefault},
    CudaMathBound{"logf", false, 1, kDefault},
    CudaMathBound{"tanhf", false, 2, kDefault},
    CudaMathBound{"erff", false, 2, kDefault},
    CudaMathBound{"erfcf", false, 4, kDefault},
    CudaMathBound{"x+y (double)", true, 0, "IEEE-754 round to nearest even"},
    CudaMathBound{"x*y (double)", true, 0, "IEEE-754 round to nearest even"},
    CudaMathBound{"x/y (double)", true, 0, "IEEE-754 round to nearest even"},
    CudaMathBound{"sqrt", true, 0, "IEEE-754 round to nearest even"},
    CudaMathBound{"rsqrt", true, 1, kDefault},
    CudaMathBound{"exp", true, 1, kDefault},
    CudaMathBound{"log", true, 1, kDefault},
    CudaMathBound{"tanh", true, 1, kDefault},
    CudaMathBound{"erf", true, 2, kDefault},
    CudaMathBound{"erfc", true, 5, kDefault},
};

struct OpFunctions {
  std::string_view op, f32, f64;
};
constexpr std::array kOpFunctions = {
    OpFunctions{"add", "x+y", "x+y (double)"}, OpFunctions{"sub", "x+y", "x+y (double)"},
    OpFunctions{"mul", "x*y", "x*y (double)"}, OpFunctions{"div", "x/y", "x/y (double)"},
    OpFunctions{"exp", "expf", "exp"},         OpFunctions{"log", "logf", "log"},
    OpFunctions{"sqrt", "sqrtf", "sqrt"},      OpFunctions{"rsqrt", "rsqrtf", "rsqrt"},
    OpFunctions{"tanh", "tanhf", "tanh"},
};

}  // namespace

std::span<const CudaMathBound> cuda_math_bounds() { return kBounds; }

const CudaMathBound* find_cuda_math_bound(std::string_view function) {
  for (const auto& b : kBounds)
    if (b.function == function) return &b;
  return nullptr;
}

std::optional<OpUlpBound> documented_ulp_bound(std::string_view op, DType dtype) {
  if (!is_floating(dtype) || dtype == DType::kF8E4M3 || dtype == DType::kF8E5M2)
    return std::nullopt;
  for (const auto& row : kOpFunctions) {
    if (row.op != op) continue;
    const CudaMathBound* b = find_cuda_math_bound(dtype == DType::kF64 ? row.f64 : row.f32);
    // NVIDIA measures against the correctly rounded result, which is itself
    // up to 0.5 ulp from the exact one.
    double out = b->max_ulp + 0.5;
    // f16/bf16: the float result, within `out` f32 ulps of exact, rounded
    // once more; an f32 ulp is 2^-13 (f16) or 2^-16 (bf16) of theirs.
    if (dtype == DType::kF16) out = 0.5 + out * 0x1p-13;
    if (dtype == DType::kBF16) out = 0.5 + out * 0x1p-16;
    return OpUlpBound{b->function, b->max_ulp, out, kCudaMathSource};
  }
  return std::nullopt;
}

}  // namespace polychip::reference
