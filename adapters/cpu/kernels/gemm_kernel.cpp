// gemm: y = alpha op(a) op(b) + beta c, rank 2 or a rank-3 batch; all
// tensors row-major. f64 runs dgemm, f32 sgemm; f16/bf16 convert to f32,
// run sgemm (f32 accumulation) and round once. When alpha != 1 or
// beta != 0 the product goes to an f32 scratch and the epilogue
// alpha acc + beta c is done in double with one rounding. math_mode 1/2
// (TF32, reduced-precision reduction) are allowed, not required: they run
// strict f32. The sim.bf16acc defect replaces the product with a loop whose
// accumulator is rounded to bf16 after every addition.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "element_types.hpp"
#include "kernel_registry.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::cpu {
namespace {

struct GemmShape {
  int64_t batch, m, n, k;
  bool trans_a, trans_b;
  int64_t lda, ldb;                // row-major leading dimensions of the stored a and b
  int64_t a_size, b_size, y_size;  // elements per batch entry
};

GemmShape gemm_shape(const KernelCall& c) {
  const TensorView &a = c[0], &b = c[1];
  const int o = a.rank - 2;
  GemmShape g{};
  g.batch = o ? a.shape[0] : 1;
  g.trans_a = c.i(attr::kTransA) != 0;
  g.trans_b = c.i(attr::kTransB) != 0;
  g.m = g.trans_a ? a.shape[o + 1] : a.shape[o];
  g.k = g.trans_a ? a.shape[o] : a.shape[o + 1];
  g.n = g.trans_b ? b.shape[o] : b.shape[o + 1];
  g.lda = std::max<int64_t>(1, a.shape[o + 1]);
  g.ldb = std::max<int64_t>(1, b.shape[o + 1]);
  g.a_size = a.shape[o] * a.shape[o + 1];
  g.b_size = b.shape[o] * b.shape[o + 1];
  g.y_size = g.m * g.n;
  return g;
}

CBLAS_TRANSPOSE blas_trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

// acc[batch][m][n] = op(a) op(b) with f32 accumulation (sgemm).
void sgemm_batch(const GemmShape& g, const float* a, const float* b, float* acc) {
  for (int64_t p = 0; p < g.batch; ++p) {
    float* out = acc + p * g.y_size;
    if (g.k == 0) {
      std::fill(out, out + g.y_size, 0.0f);
      continue;
    }
    cblas_sgemm(CblasRowMajor, blas_trans(g.trans_a), blas_trans(g.trans_b), g.m, g.n, g.k, 1.0f,
                a + p * g.a_size, g.lda, b + p * g.b_size, g.ldb, 0.0f, out,
                std::max<int64_t>(1, g.n));
  }
}

// The sim.bf16acc defect: f32 products, accumulator rounded to bf16 after
// every addition, in k order.
void bf16_accumulating_batch(const GemmShape& g, const float* a, const float* b, float* acc) {
  std::vector<float> a_row(g.k), b_col(g.k);
  for (int64_t p = 0; p < g.batch; ++p) {
    const float* ap = a + p * g.a_size;
    const float* bp = b + p * g.b_size;
    for (int64_t j = 0; j < g.n; ++j) {
      for (int64_t q = 0; q < g.k; ++q)
        b_col[q] = g.trans_b ? bp[j * g.ldb + q] : bp[q * g.ldb + j];
      for (int64_t i = 0; i < g.m; ++i) {
        float sum = 0.0f;
        for (int64_t q = 0; q < g.k; ++q) {
          const float av = g.trans_a ? ap[q * g.lda + i] : ap[i * g.lda + q];
          sum = bf16_bits_to_float(float_to_bf16_bits(sum + av * b_col[q]));
        }
        acc[p * g.y_size + i * g.n + j] = sum;
      }
    }
  }
}

template <class S>
std::vector<float> to_f32_buffer(const S* src, int64_t count) {
  std::vector<float> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<float>(to_f64(src[i]));
  return out;
}

// y = alpha acc + beta c in double, rounded once (c is not read when beta == 0).
template <class S>
void epilogue(const GemmShape& g, const float* acc, double alpha, double beta, const S* c, S* y) {
  const int64_t total = g.batch * g.y_size;
  if (beta == 0) {
    for (int64_t i = 0; i < total; ++i) y[i] = from_f64<S>(alpha * static_cast<double>(acc[i]));
  } else {
    for (int64_t i = 0; i < total; ++i)
      y[i] = from_f64<S>(alpha * static_cast<double>(acc[i]) + beta * to_f64(c[i]));
  }
}

polychip_status gemm_f64(const KernelCall& c, const GemmShape& g, double alpha, double beta) {
  const double* a = c[0].as<double>();
  const double* b = c[1].as<double>();
  const double* cc = c[2].as<double>();
  double* y = c[3].as<double>();
  for (int64_t p = 0; p < g.batch; ++p) {
    double* yp = y + p * g.y_size;
    const double* cp = cc + p * g.y_size;
    if (beta == 0) {
      std::fill(yp, yp + g.y_size, 0.0);
    } else if (yp != cp) {
      std::memcpy(yp, cp, sizeof(double) * g.y_size);
    }
    if (g.k == 0 || g.y_size == 0) {
      if (beta != 0)
        for (int64_t i = 0; i < g.y_size; ++i) yp[i] *= beta;
      continue;
    }
    cblas_dgemm(CblasRowMajor, blas_trans(g.trans_a), blas_trans(g.trans_b), g.m, g.n, g.k, alpha,
                a + p * g.a_size, g.lda, b + p * g.b_size, g.ldb, beta, yp,
                std::max<int64_t>(1, g.n));
  }
  return kOk;
}

polychip_status gemm_distinct_output(const KernelCall& c) {
  const GemmShape g = gemm_shape(c);
  const double alpha = c.f(attr::kAlpha), beta = c.f(attr::kBeta);
  const bool bf16_acc = c.numerics->gemm_bf16_accumulation;
  if (g.batch * g.y_size == 0) return kOk;
  if (c[0].dtype == DType::kF64 && !bf16_acc) return gemm_f64(c, g, alpha, beta);
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    const S* a = c[0].as<S>();
    const S* b = c[1].as<S>();
    S* y = c[3].as<S>();
    std::vector<float> a32, b32;
    const float *ap, *bp;
    if constexpr (std::is_same_v<S, float>) {
      ap = a;
      bp = b;
    } else {
      a32 = to_f32_buffer(a, g.batch * g.a_size);
      b32 = to_f32_buffer(b, g.batch * g.b_size);
      ap = a32.data();
      bp = b32.data();
    }
    if constexpr (std::is_same_v<S, float>) {
      if (alpha == 1 && beta == 0 && !bf16_acc) {  // the common case: straight into y
        sgemm_batch(g, ap, bp, y);
        return kOk;
      }
    }
    std::vector<float> acc(static_cast<size_t>(g.batch * g.y_size));
    if (bf16_acc)
      bf16_accumulating_batch(g, ap, bp, acc.data());
    else
      sgemm_batch(g, ap, bp, acc.data());
    epilogue<S>(g, acc.data(), alpha, beta, c[2].as<S>(), y);
    return kOk;
  });
}

// y may be c, and the contract's in-place rule also lets it be exactly a or
// b: the product then reads a private copy of the aliased input.
polychip_status gemm(const KernelCall& c) {
  const TensorView& y = c[3];
  if (y.numel() == 0 || (y.data != c[0].data && y.data != c[1].data))
    return gemm_distinct_output(c);
  TensorView views[4] = {c[0], c[1], c[2], c[3]};
  std::vector<char> copies[2];
  for (int k = 0; k < 2; ++k) {
    if (views[k].data != y.data) continue;
    const size_t bytes = static_cast<size_t>(views[k].numel()) * dtype_size(views[k].dtype);
    copies[k].assign(views[k].data, views[k].data + bytes);
    views[k].data = copies[k].data();
  }
  return gemm_distinct_output(KernelCall{c.op, views, c.attrs, c.numerics});
}

const NamedKernel kKernels[] = {{"gemm", gemm}};

}  // namespace

std::span<const NamedKernel> gemm_kernels() { return kKernels; }

}  // namespace polychip::cpu
