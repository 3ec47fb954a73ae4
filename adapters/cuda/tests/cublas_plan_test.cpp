#include "cublas_plan.hpp"

#include <gtest/gtest.h>

#ifdef POLYCHIP_HAVE_CUDA_HEADERS
#include <cublas_api.h>
#include <library_types.h>
#endif

namespace polychip::cuda {
namespace {

using namespace cublas;

TEST(CublasMathPlan, StrictF32IsPedantic) {
  auto p = cublas_math_plan(POLYCHIP_DTYPE_F32, 0);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->data_type, kR32F);
  EXPECT_EQ(p->compute_type, kCompute32FPedantic);
  EXPECT_EQ(p->math_mode, kPedanticMath);
  EXPECT_EQ(p->scale, ScaleType::kF32);
}

TEST(CublasMathPlan, Tf32OnlyWhenAllowed) {
  EXPECT_EQ(cublas_math_plan(POLYCHIP_DTYPE_F32, 1)->compute_type, kCompute32FFastTf32);
  EXPECT_EQ(cublas_math_plan(POLYCHIP_DTYPE_F32, 1)->math_mode, kTf32TensorOpMath);
  // Mode 2 is about reduced-precision reduction of f16/bf16, not TF32.
  EXPECT_EQ(cublas_math_plan(POLYCHIP_DTYPE_F32, 2)->compute_type, kCompute32F);
  EXPECT_EQ(cublas_math_plan(POLYCHIP_DTYPE_F32, 2)->math_mode, kDefaultMath);
}

TEST(CublasMathPlan, HalfPrecisionAccumulatesInF32UnlessMode2) {
  for (auto d : {POLYCHIP_DTYPE_F16, POLYCHIP_DTYPE_BF16})
    for (int mode : {0, 1}) {
      auto p = cublas_math_plan(d, mode);
      ASSERT_TRUE(p);
      EXPECT_EQ(p->compute_type, kCompute32F);
      EXPECT_EQ(p->math_mode, kDefaultMath | kDisallowReducedPrecisionReduction);
      EXPECT_EQ(p->scale, ScaleType::kF32);
    }
  auto h = cublas_math_plan(POLYCHIP_DTYPE_F16, 2);
  EXPECT_EQ(h->compute_type, kCompute16F);
  EXPECT_EQ(h->scale, ScaleType::kF16);
  EXPECT_EQ(h->data_type, kR16F);
  auto b = cublas_math_plan(POLYCHIP_DTYPE_BF16, 2);
  EXPECT_EQ(b->compute_type, kCompute32F);
  EXPECT_EQ(b->math_mode, kDefaultMath);
  EXPECT_EQ(b->data_type, kR16BF);
}

TEST(CublasMathPlan, F64AndInvalidInputs) {
  EXPECT_EQ(cublas_math_plan(POLYCHIP_DTYPE_F64, 0)->compute_type, kCompute64F);
  EXPECT_EQ(cublas_math_plan(POLYCHIP_DTYPE_F64, 1)->scale, ScaleType::kF64);
  EXPECT_FALSE(cublas_math_plan(POLYCHIP_DTYPE_F8E4M3, 0));
  EXPECT_FALSE(cublas_math_plan(POLYCHIP_DTYPE_F32, 3));
  EXPECT_FALSE(cublas_math_plan(POLYCHIP_DTYPE_F32, -1));
}

polychip_tensor mat(std::vector<int64_t> shape) {
  polychip_tensor t{};
  t.rank = static_cast<int32_t>(shape.size());
  for (int d = 0; d < t.rank; ++d) t.shape[d] = shape[d];
  return t;
}

TEST(CublasGemmShape, RowMajorBecomesSwappedColumnMajor) {
  // y[M=2, N=3] = a[2, 4] b[4, 3]
  std::vector<polychip_tensor> ts{mat({2, 4}), mat({4, 3}), mat({2, 3}), mat({2, 3})};
  auto s = cublas_gemm_shape(ts, false, false);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->trans_a, kOpN);
  EXPECT_EQ(s->trans_b, kOpN);
  EXPECT_EQ(s->m, 3);
  EXPECT_EQ(s->n, 2);
  EXPECT_EQ(s->k, 4);
  EXPECT_EQ(s->lda, 3);  // b's row length
  EXPECT_EQ(s->ldb, 4);  // a's row length
  EXPECT_EQ(s->ldc, 3);
  EXPECT_EQ(s->batch, 1);
}

TEST(CublasGemmShape, TransposesSwapToo) {
  // a stored [K=4, M=2] (trans_a), b stored [N=3, K=4] (trans_b), batch 5.
  std::vector<polychip_tensor> ts{mat({5, 4, 2}), mat({5, 3, 4}), mat({5, 2, 3}), mat({5, 2, 3})};
  auto s = cublas_gemm_shape(ts, true, true);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->trans_a, kOpT);  // cuBLAS A is our b
  EXPECT_EQ(s->trans_b, kOpT);
  EXPECT_EQ(s->m, 3);
  EXPECT_EQ(s->n, 2);
  EXPECT_EQ(s->k, 4);
  EXPECT_EQ(s->lda, 4);
  EXPECT_EQ(s->ldb, 2);
  EXPECT_EQ(s->stride_a, 12);
  EXPECT_EQ(s->stride_b, 8);
  EXPECT_EQ(s->stride_c, 6);
  EXPECT_EQ(s->batch, 5);
}

TEST(CublasGemmShape, DeclinesSizesBeyondInt) {
  std::vector<polychip_tensor> ts{mat({1, 1}), mat({1, int64_t{1} << 32}), mat({1, 1}),
                                  mat({1, 1})};
  EXPECT_FALSE(cublas_gemm_shape(ts, false, false));
}

#ifdef POLYCHIP_HAVE_CUDA_HEADERS
TEST(CublasEnums, MatchTheToolkitHeaders) {
  EXPECT_EQ(kOpN, CUBLAS_OP_N);
  EXPECT_EQ(kOpT, CUBLAS_OP_T);
  EXPECT_EQ(kR16F, CUDA_R_16F);
  EXPECT_EQ(kR16BF, CUDA_R_16BF);
  EXPECT_EQ(kR32F, CUDA_R_32F);
  EXPECT_EQ(kR64F, CUDA_R_64F);
  EXPECT_EQ(kCompute16F, CUBLAS_COMPUTE_16F);
  EXPECT_EQ(kCompute32F, CUBLAS_COMPUTE_32F);
  EXPECT_EQ(kCompute32FPedantic, CUBLAS_COMPUTE_32F_PEDANTIC);
  EXPECT_EQ(kCompute32FFastTf32, CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(kCompute64F, CUBLAS_COMPUTE_64F);
  EXPECT_EQ(kDefaultMath, CUBLAS_DEFAULT_MATH);
  EXPECT_EQ(kPedanticMath, CUBLAS_PEDANTIC_MATH);
  EXPECT_EQ(kTf32TensorOpMath, CUBLAS_TF32_TENSOR_OP_MATH);
  EXPECT_EQ(kDisallowReducedPrecisionReduction, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  EXPECT_EQ(kGemmDefault, CUBLAS_GEMM_DEFAULT);
}
#endif

}  // namespace
}  // namespace polychip::cuda
