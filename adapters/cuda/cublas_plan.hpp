// How a polychip gemm becomes one cublasGemmStridedBatchedEx call: the
// math-mode mapping and the row-major to column-major argument swap. Pure
// functions, unit-tested without a GPU.
//
// Math modes of the op contract (attr math_mode) -> cuBLAS:
//
// | dtype | 0 strict fp32                   | 1 TF32 allowed            | 2 reduced-precision
// reduction |
// |-------|---------------------------------|---------------------------|-------------------------------|
// | f64   | COMPUTE_64F, DEFAULT_MATH       | same                      | same | | f32   |
// COMPUTE_32F_PEDANTIC, PEDANTIC  | COMPUTE_32F_FAST_TF32, TF32_TENSOR_OP | COMPUTE_32F, DEFAULT
// (no TF32) | | f16   | COMPUTE_32F, DEFAULT + DISALLOW_REDUCED_PRECISION_REDUCTION | same as 0 |
// COMPUTE_16F, DEFAULT (f16 scalars) | | bf16  | COMPUTE_32F, DEFAULT +
// DISALLOW_REDUCED_PRECISION_REDUCTION | same as 0 | COMPUTE_32F, DEFAULT (cuBLAS may reduce in
// bf16) |
//
// Mode 0 for f16/bf16 keeps tensor cores (they accumulate in f32) but
// forbids split-K reductions in the narrow type, which is exactly the
// contract's "accumulate in f32 and round once".
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "polychip/adapter_abi.h"

namespace polychip::cuda {

// cuBLAS / CUDA library enum values (cublas_api.h, library_types.h, CUDA 13),
// declared here so the adapter builds without the toolkit headers;
// tests/cublas_plan_test.cpp checks them against the headers.
namespace cublas {
inline constexpr int kOpN = 0, kOpT = 1;
inline constexpr int kR16F = 2, kR16BF = 14, kR32F = 0, kR64F = 1;
inline constexpr int kCompute16F = 64, kCompute32F = 68, kCompute32FPedantic = 69,
                     kCompute32FFastTf32 = 77, kCompute64F = 70;
inline constexpr int kDefaultMath = 0, kPedanticMath = 2, kTf32TensorOpMath = 3,
                     kDisallowReducedPrecisionReduction = 16;
inline constexpr int kGemmDefault = -1;
}  // namespace cublas

enum class ScaleType { kF64, kF32, kF16 };

struct CublasMathPlan {
  int data_type;     // of a, b, c
  int compute_type;  // cublasComputeType_t
  int math_mode;     // cublasMath_t flags for cublasSetMathMode
  ScaleType scale;   // type of alpha and beta
};

// nullopt for dtypes cuBLAS gemm does not take here, or a mode outside 0-2.
std::optional<CublasMathPlan> cublas_math_plan(polychip_dtype dtype, int64_t math_mode);

struct CublasGemmShape {
  int trans_a, trans_b;  // cuBLAS operands: A' = our b, B' = our a
  int m, n, k;           // m' = N, n' = M, k' = K
  int lda, ldb, ldc;
  long long stride_a, stride_b, stride_c;
  int batch;
};

// Row-major y[M,N] = op(a) op(b) computed as column-major y^T = op(b)^T
// op(a)^T. nullopt when a size exceeds cuBLAS's 32-bit int arguments.
std::optional<CublasGemmShape> cublas_gemm_shape(std::span<const polychip_tensor> tensors,
                                                 bool trans_a, bool trans_b);

}  // namespace polychip::cuda
