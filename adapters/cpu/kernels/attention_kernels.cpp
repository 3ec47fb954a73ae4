// Scaled-dot-product attention on row-major [B, H, S, D] tensors, forward
// and backward, per (batch, head) in double with dgemm for the products:
// scores = scale q k^T (causal: key j visible to query i iff j <= i),
// P = softmax(scores) with max subtraction, o = P v, lse = log sum exp.
// The backward evaluates the formula fused kernels use, on the o and lse it
// is given: P = exp(scale q k^T - lse) (masked), D_i = do_i . o_i,
// dv = P^T do, dP = do v^T, dS = P (dP - D), dq = scale dS k,
// dk = scale dS^T q.
#include <cblas.h>

#include <cmath>
#include <limits>
#include <vector>

#include "element_types.hpp"
#include "kernel_registry.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::cpu {
namespace {

struct AttentionShape {
  int64_t heads_total, s, d;  // B*H, S, D
};

AttentionShape attention_shape(const TensorView& q) {
  return {q.shape[0] * q.shape[1], q.shape[2], q.shape[3]};
}

template <class S>
void load_block(const S* src, int64_t count, std::vector<double>& dst) {
  dst.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) dst[i] = to_f64(src[i]);
}

// c[m, n] = op(a) op(b) (row-major, no accumulation into c).
void dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, const double* b,
           double* c, double alpha = 1.0) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(c, c + m * n, 0.0);
    return;
  }
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, alpha, a, lda, b, ldb, 0.0, c, n);
}

// probs[S, S] = masked softmax of scale q k^T; lse[S] its log-sum-exp.
void attention_probs(const std::vector<double>& q, const std::vector<double>& k, int64_t s,
                     int64_t d, double scale, bool causal, std::vector<double>& probs,
                     std::vector<double>& lse) {
  probs.resize(static_cast<size_t>(s * s));
  lse.resize(static_cast<size_t>(s));
  dgemm(false, true, s, s, d, q.data(), k.data(), probs.data(), scale);
  for (int64_t i = 0; i < s; ++i) {
    double* row = probs.data() + i * s;
    const int64_t visible = causal ? i + 1 : s;
    double m = -std::numeric_limits<double>::infinity();
    bool has_nan = false;
    for (int64_t j = 0; j < visible; ++j) {
      has_nan |= std::isnan(row[j]);
      m = std::fmax(m, row[j]);
    }
    if (has_nan) m = std::numeric_limits<double>::quiet_NaN();
    double sum = 0;
    for (int64_t j = 0; j < visible; ++j) {
      row[j] = std::exp(row[j] - m);
      sum += row[j];
    }
    for (int64_t j = 0; j < visible; ++j) row[j] /= sum;
    for (int64_t j = visible; j < s; ++j) row[j] = 0.0;
    lse[i] = m + std::log(sum);
  }
}

// probs[S, S] = exp(scale q k^T - lse) where visible, 0 where masked.
void saved_probs(const std::vector<double>& q, const std::vector<double>& k, const float* lse,
                 int64_t s, int64_t d, double scale, bool causal, std::vector<double>& probs) {
  probs.resize(static_cast<size_t>(s * s));
  dgemm(false, true, s, s, d, q.data(), k.data(), probs.data(), scale);
  for (int64_t i = 0; i < s; ++i) {
    double* row = probs.data() + i * s;
    const int64_t visible = causal ? i + 1 : s;
    for (int64_t j = 0; j < visible; ++j) row[j] = std::exp(row[j] - static_cast<double>(lse[i]));
    for (int64_t j = visible; j < s; ++j) row[j] = 0.0;
  }
}

// q, k, v -> o, lse (f32).
polychip_status attention(const KernelCall& c) {
  const AttentionShape sh = attention_shape(c[0]);
  const double scale = c.f(attr::kScale);
  const bool causal = c.i(attr::kCausal) != 0;
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    const int64_t block = sh.s * sh.d;
    std::vector<double> q, k, v, probs, lse, out(static_cast<size_t>(block));
    for (int64_t bh = 0; bh < sh.heads_total; ++bh) {
      load_block(c[0].as<S>() + bh * block, block, q);
      load_block(c[1].as<S>() + bh * block, block, k);
      load_block(c[2].as<S>() + bh * block, block, v);
      attention_probs(q, k, sh.s, sh.d, scale, causal, probs, lse);
      dgemm(false, false, sh.s, sh.d, sh.s, probs.data(), v.data(), out.data());
      S* o = c[3].as<S>() + bh * block;
      for (int64_t i = 0; i < block; ++i) o[i] = from_f64<S>(out[i]);
      float* lse_out = c[4].as<float>() + bh * sh.s;
      for (int64_t i = 0; i < sh.s; ++i) lse_out[i] = static_cast<float>(lse[i]);
    }
    return kOk;
  });
}

// do, q, k, v, o, lse -> dq, dk, dv.
polychip_status attention_backward(const KernelCall& c) {
  const AttentionShape sh = attention_shape(c[1]);
  const double scale = c.f(attr::kScale);
  const bool causal = c.i(attr::kCausal) != 0;
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    const int64_t block = sh.s * sh.d;
    std::vector<double> dout, q, k, v, o, probs, dprobs(static_cast<size_t>(sh.s * sh.s));
    std::vector<double> dq(block), dk(block), dv(block);
    for (int64_t bh = 0; bh < sh.heads_total; ++bh) {
      load_block(c[0].as<S>() + bh * block, block, dout);
      load_block(c[1].as<S>() + bh * block, block, q);
      load_block(c[2].as<S>() + bh * block, block, k);
      load_block(c[3].as<S>() + bh * block, block, v);
      load_block(c[4].as<S>() + bh * block, block, o);
      const float* saved_lse = c[5].as<float>() + bh * sh.s;
      saved_probs(q, k, saved_lse, sh.s, sh.d, scale, causal, probs);
      dgemm(true, false, sh.s, sh.d, sh.s, probs.data(), dout.data(), dv.data());
      dgemm(false, true, sh.s, sh.s, sh.d, dout.data(), v.data(), dprobs.data());
      // dS = P (dP - D), D_i = do_i . o_i; in place in dprobs.
      for (int64_t i = 0; i < sh.s; ++i) {
        double* dp = dprobs.data() + i * sh.s;
        const double* p = probs.data() + i * sh.s;
        double dot = 0;
        for (int64_t j = 0; j < sh.d; ++j) dot += dout[i * sh.d + j] * o[i * sh.d + j];
        for (int64_t j = 0; j < sh.s; ++j) dp[j] = p[j] * (dp[j] - dot);
      }
      dgemm(false, false, sh.s, sh.d, sh.s, dprobs.data(), k.data(), dq.data(), scale);
      dgemm(true, false, sh.s, sh.d, sh.s, dprobs.data(), q.data(), dk.data(), scale);
      S* dq_out = c[6].as<S>() + bh * block;
      S* dk_out = c[7].as<S>() + bh * block;
      S* dv_out = c[8].as<S>() + bh * block;
      for (int64_t i = 0; i < block; ++i) {
        dq_out[i] = from_f64<S>(dq[i]);
        dk_out[i] = from_f64<S>(dk[i]);
        dv_out[i] = from_f64<S>(dv[i]);
      }
    }
    return kOk;
  });
}

const NamedKernel kKernels[] = {
    {"attention", attention},
    {"attention_backward", attention_backward},
};

}  // namespace

std::span<const NamedKernel> attention_kernels() { return kKernels; }

}  // namespace polychip::cpu
