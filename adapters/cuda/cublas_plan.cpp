#include "cublas_plan.hpp"

#include <limits>

namespace polychip::cuda {

std::optional<CublasMathPlan> cublas_math_plan(polychip_dtype dtype, int64_t math_mode) {
  using namespace cublas;
  if (math_mode < 0 || math_mode > 2) return std::nullopt;
  const int strict_narrow = kDefaultMath | kDisallowReducedPrecisionReduction;
  switch (dtype) {
    case POLYCHIP_DTYPE_F64:
      return CublasMathPlan{kR64F, kCompute64F, kDefaultMath, ScaleType::kF64};
    case POLYCHIP_DTYPE_F32:
      if (math_mode == 0)
        return CublasMathPlan{kR32F, kCompute32FPedantic, kPedanticMath, ScaleType::kF32};
      if (math_mode == 1)
        return CublasMathPlan{kR32F, kCompute32FFastTf32, kTf32TensorOpMath, ScaleType::kF32};
      return CublasMathPlan{kR32F, kCompute32F, kDefaultMath, ScaleType::kF32};
    case POLYCHIP_DTYPE_F16:
      if (math_mode == 2) return CublasMathPlan{kR16F, kCompute16F, kDefaultMath, ScaleType::kF16};
      return CublasMathPlan{kR16F, kCompute32F, strict_narrow, ScaleType::kF32};
    case POLYCHIP_DTYPE_BF16:
      if (math_mode == 2) return CublasMathPlan{kR16BF, kCompute32F, kDefaultMath, ScaleType::kF32};
      return CublasMathPlan{kR16BF, kCompute32F, strict_narrow, ScaleType::kF32};
    default:
      return std::nullopt;
  }
}

std::optional<CublasGemmShape> cublas_gemm_shape(std::span<const polychip_tensor> tensors,
                                                 bool trans_a, bool trans_b) {
  if (tensors.size() != 4) return std::nullopt;
  const auto& a = tensors[0];
  const auto& b = tensors[1];
  if (a.rank != 2 && a.rank != 3) return std::nullopt;
  const int o = a.rank - 2;
  const int64_t batch = o ? a.shape[0] : 1;
  const int64_t m = trans_a ? a.shape[o + 1] : a.shape[o];
  const int64_t k = trans_a ? a.shape[o] : a.shape[o + 1];
  const int64_t n = trans_b ? b.shape[o] : b.shape[o + 1];
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  for (int64_t v : {batch, m, n, k})
    if (v > kMax) return std::nullopt;
  CublasGemmShape s{};
  s.trans_a = trans_b ? cublas::kOpT : cublas::kOpN;
  s.trans_b = trans_a ? cublas::kOpT : cublas::kOpN;
  s.m = static_cast<int>(n);
  s.n = static_cast<int>(m);
  s.k = static_cast<int>(k);
  // Leading dimension = length of a stored row; at least 1 for empty matrices.
  auto ld = [](int64_t v) { return static_cast<int>(v > 0 ? v : 1); };
  s.lda = ld(trans_b ? k : n);
  s.ldb = ld(trans_a ? m : k);
  s.ldc = ld(n);
  s.stride_a = static_cast<long long>(k * n);
  s.stride_b = static_cast<long long>(m * k);
  s.stride_c = static_cast<long long>(m * n);
  s.batch = static_cast<int>(batch);
  return s;
}

}  // namespace polychip::cuda
