// gemm through OpenBLAS: transposes, alpha/beta, batches, in-place y = c,
// one rounding for f16/bf16, and a random case against a double loop.
#include <cmath>
#include <random>

#include "kernel_test_util.hpp"

namespace polychip::testing {
namespace {

polychip_op_attrs gemm_attrs(OpRunner& run, int ta, int tb, double alpha, double beta) {
  auto a = run.attrs("gemm");
  a.ints[attr::kTransA] = ta;
  a.ints[attr::kTransB] = tb;
  a.floats[attr::kAlpha] = alpha;
  a.floats[attr::kBeta] = beta;
  return a;
}

TEST_F(CpuKernelTest, GemmSmallExactInEveryDtypeAndTranspose) {
  // A = [[1,2,3],[4,5,6]], B = [[7,8],[9,10],[11,12]], A B = [[58,64],[139,154]].
  const std::vector<double> a = {1, 2, 3, 4, 5, 6}, at = {1, 4, 2, 5, 3, 6};
  const std::vector<double> b = {7, 8, 9, 10, 11, 12}, bt = {7, 9, 11, 8, 10, 12};
  for (DType dt : kFloatDTypes) {
    for (int ta : {0, 1})
      for (int tb : {0, 1}) {
        auto A = run.make(dt, ta ? Shape{3, 2} : Shape{2, 3}, ta ? at : a);
        auto B = run.make(dt, tb ? Shape{2, 3} : Shape{3, 2}, tb ? bt : b);
        auto C = run.make(dt, {2, 2}, {NAN, NAN, NAN, NAN});  // not read: beta = 0
        auto Y = run.empty(dt, {2, 2});
        run.call("gemm", {A, B, C, Y}, gemm_attrs(run, ta, tb, 1, 0));
        EXPECT_TRUE(same_values(run.values(Y), rounded(dt, {58, 64, 139, 154})))
            << dtype_name(dt) << " ta " << ta << " tb " << tb;
      }
  }
}

TEST_F(CpuKernelTest, GemmAlphaBetaAndInPlaceC) {
  for (DType dt : kFloatDTypes) {
    auto A = run.make(dt, {2, 2}, {1, 2, 3, 4});
    auto B = run.make(dt, {2, 2}, {1, 0, 0, 1});
    auto C = run.make(dt, {2, 2}, {10, 20, 30, 40});
    auto Y = run.empty(dt, {2, 2});
    run.call("gemm", {A, B, C, Y}, gemm_attrs(run, 0, 0, 2, 0.5));
    EXPECT_TRUE(same_values(run.values(Y), {7, 14, 21, 28})) << dtype_name(dt);
    run.call("gemm", {A, B, C, C}, gemm_attrs(run, 0, 0, -1, 1));  // y is c
    EXPECT_TRUE(same_values(run.values(C), {9, 18, 27, 36})) << dtype_name(dt);
  }
}

TEST_F(CpuKernelTest, GemmOutputMayBeAnInput) {
  for (DType dt : {DType::kF64, DType::kF32, DType::kF16}) {
    auto A = run.make(dt, {2, 2}, {1, 2, 3, 4});
    auto B = run.make(dt, {2, 2}, {5, 6, 7, 8});
    auto C = run.make(dt, {2, 2}, {0, 0, 0, 0});
    run.call("gemm", {A, B, C, A}, gemm_attrs(run, 0, 0, 1, 0));  // a = a b
    EXPECT_TRUE(same_values(run.values(A), {19, 22, 43, 50})) << dtype_name(dt);
    run.call("gemm", {A, B, C, B}, gemm_attrs(run, 0, 1, 1, 0));  // b = a b^T
    EXPECT_TRUE(same_values(run.values(B),
                            {19 * 5 + 22 * 6, 19 * 7 + 22 * 8, 43 * 5 + 50 * 6, 43 * 7 + 50 * 8}))
        << dtype_name(dt);
  }
}

TEST_F(CpuKernelTest, GemmBatchedAndDegenerateK) {
  auto A = run.make(DType::kF32, {2, 1, 2}, {1, 2, 3, 4});
  auto B = run.make(DType::kF32, {2, 2, 1}, {5, 6, 7, 8});
  auto C = run.make(DType::kF32, {2, 1, 1}, {1, 1});
  auto Y = run.empty(DType::kF32, {2, 1, 1});
  run.call("gemm", {A, B, C, Y}, gemm_attrs(run, 0, 0, 1, 0));
  EXPECT_TRUE(same_values(run.values(Y), {17, 53}));
  for (DType dt : {DType::kF64, DType::kF32, DType::kBF16}) {
    auto A0 = run.make(dt, {2, 0}, {}), B0 = run.make(dt, {0, 2}, {});
    auto C0 = run.make(dt, {2, 2}, {1, 2, 3, 4});
    auto Y0 = run.empty(dt, {2, 2});
    run.call("gemm", {A0, B0, C0, Y0}, gemm_attrs(run, 0, 0, 1, 3));
    EXPECT_TRUE(same_values(run.values(Y0), {3, 6, 9, 12})) << dtype_name(dt);
  }
}

TEST_F(CpuKernelTest, HalfGemmAccumulatesInF32AndRoundsOnce) {
  // 1 + 2^-11 + 2^-11: f16 accumulation would round each tie back to 1.
  auto A = run.make(DType::kF16, {1, 3}, {1, 0x1p-11, 0x1p-11});
  auto B = run.make(DType::kF16, {3, 1}, {1, 1, 1});
  auto C = run.make(DType::kF16, {1, 1}, {0});
  auto Y = run.empty(DType::kF16, {1, 1});
  run.call("gemm", {A, B, C, Y}, gemm_attrs(run, 0, 0, 1, 0));
  EXPECT_TRUE(same_values(run.values(Y), {1 + 0x1p-10}));
}

// Against a double loop with a forward error bound that holds for every
// summation order, blocking and FMA use a correct BLAS may pick (OpenBLAS
// picks its kernel by CPU): |y - exact| <= gamma_{k+2} (|alpha| sum|a||b| +
// |beta| |c|) in the accumulation precision, plus the output's rounding.
TEST_F(CpuKernelTest, GemmRandomWithinTheForwardErrorBound) {
  const int m = 37, n = 29, k = 61;
  const double alpha = 0.75, beta = -1.25;
  std::mt19937 rng(7);
  std::normal_distribution<double> dist;
  std::vector<double> a(m * k), b(n * k), c(m * n);
  for (auto* v : {&a, &b, &c})
    for (auto& x : *v) x = dist(rng);
  for (DType dt : kFloatDTypes) {
    auto A = run.make(dt, {m, k}, a), B = run.make(dt, {n, k}, b), C = run.make(dt, {m, n}, c);
    auto Y = run.empty(dt, {m, n});
    run.call("gemm", {A, B, C, Y}, gemm_attrs(run, 0, 1, alpha, beta));
    const auto ar = run.values(A), br = run.values(B), cr = run.values(C), y = run.values(Y);
    // f16 and bf16 accumulate in f32 (HalfGemmAccumulatesInF32AndRoundsOnce).
    const double u_acc = dt == DType::kF64 ? 0x1p-53 : 0x1p-24;
    const double u_out = dt == DType::kF64   ? 0x1p-53
                         : dt == DType::kF32 ? 0x1p-24
                         : dt == DType::kF16 ? 0x1p-11
                                             : 0x1p-8;
    const double gamma = (k + 2) * u_acc / (1 - (k + 2) * u_acc);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        // long double (64-bit significand) keeps the reference's own error
        // far below the f64 bound.
        long double s = 0, magnitude = 0;
        for (int q = 0; q < k; ++q) {
          const long double p = static_cast<long double>(ar[i * k + q]) * br[j * k + q];
          s += p;
          magnitude += std::fabs(p);
        }
        const double exact = static_cast<double>(alpha * s + beta * cr[i * n + j]);
        const double bound =
            gamma * (std::fabs(alpha) * magnitude + std::fabs(beta * cr[i * n + j])) +
            u_out * std::fabs(exact);
        const double got = y[static_cast<size_t>(i * n + j)];
        EXPECT_LE(std::fabs(got - exact), bound) << dtype_name(dt) << " element (" << i << ", " << j
                                                 << "): got " << got << ", exact " << exact;
      }
  }
}

}  // namespace
}  // namespace polychip::testing
