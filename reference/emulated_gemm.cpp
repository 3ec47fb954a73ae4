// Emulated cuBLAS gemm. Assumptions (docs/reference-numerics.md):
//  - each output element is one dot product accumulated in K order with one
//    FMA per term: acc = fma(a_ik, b_kj, acc), in f32 (f64 for f64) — the
//    order of cuBLAS's simple (non split-K) kernels, where a thread owns an
//    output and walks K;
//  - TF32 mode (math_mode 1, f32 only): both operands rounded to TF32 with
//    nearest even (as cuBLAS on an H200), products exact in f32, f32
//    accumulation;
//  - f16/bf16: products exact in f32, f32 accumulation, one rounding of the
//    result (CUBLAS_COMPUTE_32F); math_mode 2 only *allows* reduced
//    precision reduction, which cuBLAS uses for split-K only: not modelled;
//  - epilogue y = alpha acc (+ fma(beta, c, alpha acc) when beta != 0) in the
//    accumulation precision, alpha and beta converted to it.
#include <cmath>

#include "reference/emulation_ops.hpp"
#include "reference/fma_dot.hpp"

namespace polychip::reference::emulation {
namespace {

template <typename Acc>
void gemm_as(const Call& c) {
  const HostTensor &a = c.in[0], &b = c.in[1], &cc = c.in[2];
  HostTensor& y = c.out[0];
  const int o = static_cast<int>(a.shape.size()) - 2;
  const bool ta = c.i(attr::kTransA) != 0, tb = c.i(attr::kTransB) != 0;
  const bool tf32 = y.dtype == DType::kF32 &&
                    c.i(attr::kMathMode) == static_cast<int64_t>(MathMode::kTf32Allowed);
  const int64_t batch = o ? a.shape[0] : 1;
  const int64_t m = y.shape[o], n = y.shape[o + 1];
  const int64_t kk = ta ? a.shape[o] : a.shape[o + 1];
  const Acc alpha = static_cast<Acc>(c.f(attr::kAlpha)), beta = static_cast<Acc>(c.f(attr::kBeta));
  auto operand = [&](double v) {
    Acc x = static_cast<Acc>(v);
    if constexpr (std::is_same_v<Acc, float>)
      if (tf32) x = round_to_tf32(x);
    return x;
  };
  // op(a) as [M, K] and op(b) transposed as [N, K], both contiguous in K.
  std::vector<Acc> a_rows(static_cast<size_t>(m * kk)), b_cols(static_cast<size_t>(n * kk));
  for (int64_t p = 0; p < batch; ++p) {
    const double* ap = a.values.data() + p * m * kk;
    const double* bp = b.values.data() + p * kk * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t k = 0; k < kk; ++k)
        a_rows[i * kk + k] = operand(ta ? ap[k * m + i] : ap[i * kk + k]);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < kk; ++k)
        b_cols[j * kk + k] = operand(tb ? bp[j * kk + k] : bp[k * n + j]);
    const double* cp = cc.values.data() + p * m * n;
    double* yp = y.values.data() + p * m * n;
    for (int64_t i = 0; i < m; ++i) {
      const Acc* ar = a_rows.data() + i * kk;
      auto store = [&](int64_t j, Acc acc) {
        Acc r = alpha * acc;
        if (beta != 0) r = std::fma(beta, static_cast<Acc>(cp[i * n + j]), r);
        yp[i * n + j] = to_output(y.dtype, r);
      };
      int64_t j = 0;
      for (; j + 4 <= n; j += 4) {
        // .data() + offset: with K == 0 the vector is empty and [] would be UB.
        const Acc* cols[4] = {b_cols.data() + j * kk, b_cols.data() + (j + 1) * kk,
                              b_cols.data() + (j + 2) * kk, b_cols.data() + (j + 3) * kk};
        Acc acc[4] = {0, 0, 0, 0};
        fma_dot4(ar, cols, kk, acc);
        for (int q = 0; q < 4; ++q) store(j + q, acc[q]);
      }
      for (; j < n; ++j) store(j, fma_dot(ar, b_cols.data() + j * kk, kk, Acc(0)));
    }
  }
}

}  // namespace

void gemm(const Call& c) {
  if (c.compute_dtype() == DType::kF64)
    gemm_as<double>(c);
  else
    gemm_as<float>(c);
}

}  // namespace polychip::reference::emulation
