// Emulated attention after FlashAttention-2 (Dao, 2023), which is what
// PyTorch's scaled_dot_product_attention runs on NVIDIA GPUs for f16/bf16:
// forward, per query row, keys in blocks of 64:
//   s_j = scale * (q . k_j)            dot products: f32 fma in D order
//   m' = max(m, max_j s_j); c = exp(m - m'); p_j = exp(s_j - m')
//   l = l c + sum_j p_j;  acc = acc c + sum_j P_j v_j (fma, j in order)
//   where P_j = p_j rounded to the input dtype (the P @ V tensor-core
//   product takes f16/bf16 operands); o = acc / l; lse = m + log(l).
// backward: D_i = do_i . o_i; p_ij = exp(s_ij - lse_i); dp_ij = do_i . v_j;
//   ds_ij = p_ij (dp_ij - D_i); dv_j += P_ij do_i and dk_j += dS_ij q_i
//   over i in order, dq_i += dS_ij k_j over j in order (P, dS rounded to the
//   input dtype as MMA operands); dq, dk scaled at the end.
// f32 inputs (no FlashAttention on NVIDIA; memory-efficient attention
// instead) use the same algorithm without operand rounding; f64 in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/cuda_math.hpp"
#include "reference/emulation_ops.hpp"
#include "reference/fma_dot.hpp"

namespace polychip::reference::emulation {
namespace {

constexpr int64_t kKeyBlock = 64;

// One head's [S, D] slice in the accumulation type.
template <typename A>
void load_head(const std::vector<double>& src, size_t base, std::vector<A>& dst) {
  for (size_t k = 0; k < dst.size(); ++k) dst[k] = static_cast<A>(src[base + k]);
}

template <typename A>
void attention_as(const Call& c) {
  const auto &q = c.in[0].values, &k = c.in[1].values, &v = c.in[2].values;
  HostTensor &o = c.out[0], &lse = c.out[1];
  const Shape& sh = c.in[0].shape;
  const int64_t heads = sh[0] * sh[1], s = sh[2], d = sh[3];
  const bool causal = c.i(attr::kCausal) != 0;
  const A scale = static_cast<A>(c.f(attr::kScale));
  const DType t = c.in[0].dtype;
  std::vector<A> acc(static_cast<size_t>(d)), p(kKeyBlock), pr(kKeyBlock);
  std::vector<A> qh(static_cast<size_t>(s * d)), kh(qh.size()), vh(qh.size());
  for (int64_t bh = 0; bh < heads; ++bh) {
    const size_t base = bh * s * d;
    load_head(q, base, qh);
    load_head(k, base, kh);
    load_head(v, base, vh);
    for (int64_t i = 0; i < s; ++i) {
      const int64_t keys = causal ? i + 1 : s;
      A m = -std::numeric_limits<A>::infinity(), l = 0;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t j0 = 0; j0 < keys; j0 += kKeyBlock) {
        const int64_t j1 = std::min(keys, j0 + kKeyBlock);
        A block_max = -std::numeric_limits<A>::infinity();
        for (int64_t j = j0; j < j1; ++j) {
          p[j - j0] = scale * fma_dot(&qh[i * d], &kh[j * d], d, A(0));
          block_max = std::max(block_max, p[j - j0]);
        }
        const A m_new = std::max(m, block_max);
        const A correction = cuda_exp(m - m_new);
        A block_sum = 0;
        for (int64_t j = j0; j < j1; ++j) {
          p[j - j0] = cuda_exp(p[j - j0] - m_new);
          block_sum += p[j - j0];
          pr[j - j0] = to_operand(t, p[j - j0]);
        }
        l = l * correction + block_sum;
        for (int64_t x = 0; x < d; ++x) acc[x] *= correction;
        for (int64_t j = j0; j < j1; ++j) fma_axpy(pr[j - j0], &vh[j * d], acc.data(), d);
        m = m_new;
      }
      for (int64_t x = 0; x < d; ++x) o.values[base + i * d + x] = to_output(o.dtype, acc[x] / l);
      lse.values[bh * s + i] = to_output(lse.dtype, m + cuda_log(l));
    }
  }
}

template <typename A>
void attention_backward_as(const Call& c) {
  const auto &dout = c.in[0].values, &q = c.in[1].values, &k = c.in[2].values;
  const auto &v = c.in[3].values, &o = c.in[4].values, &lse = c.in[5].values;
  HostTensor &dq = c.out[0], &dk = c.out[1], &dv = c.out[2];
  const Shape& sh = c.in[1].shape;
  const int64_t heads = sh[0] * sh[1], s = sh[2], d = sh[3];
  const bool causal = c.i(attr::kCausal) != 0;
  const A scale = static_cast<A>(c.f(attr::kScale));
  const DType t = c.in[1].dtype;
  const size_t head_size = static_cast<size_t>(s * d);
  std::vector<A> dq_acc(head_size), dk_acc(head_size), dv_acc(head_size), big_d(s);
  std::vector<A> qh(head_size), kh(head_size), vh(head_size), oh(head_size), doh(head_size);
  for (int64_t bh = 0; bh < heads; ++bh) {
    const size_t base = bh * head_size;
    load_head(q, base, qh);
    load_head(k, base, kh);
    load_head(v, base, vh);
    load_head(o, base, oh);
    load_head(dout, base, doh);
    std::fill(dq_acc.begin(), dq_acc.end(), A(0));
    std::fill(dk_acc.begin(), dk_acc.end(), A(0));
    std::fill(dv_acc.begin(), dv_acc.end(), A(0));
    for (int64_t i = 0; i < s; ++i) big_d[i] = fma_dot(&doh[i * d], &oh[i * d], d, A(0));
    // The kernel's outer loop runs over key blocks, the inner over queries:
    // dk_j and dv_j accumulate over i in order; dq_i over j in order.
    for (int64_t j = 0; j < s; ++j) {
      for (int64_t i = causal ? j : 0; i < s; ++i) {
        const A lse_i = static_cast<A>(lse[bh * s + i]);
        const A pij = cuda_exp(scale * fma_dot(&qh[i * d], &kh[j * d], d, A(0)) - lse_i);
        const A dp = fma_dot(&doh[i * d], &vh[j * d], d, A(0));
        const A ds = to_operand(t, pij * (dp - big_d[i]));
        const A pr = to_operand(t, pij);
        fma_axpy(pr, &doh[i * d], &dv_acc[j * d], d);
        fma_axpy(ds, &qh[i * d], &dk_acc[j * d], d);
        fma_axpy(ds, &kh[j * d], &dq_acc[i * d], d);
      }
    }
    for (size_t x = 0; x < head_size; ++x) {
      dq.values[base + x] = to_output(dq.dtype, dq_acc[x] * scale);
      dk.values[base + x] = to_output(dk.dtype, dk_acc[x] * scale);
      dv.values[base + x] = to_output(dv.dtype, dv_acc[x]);
    }
  }
}

}  // namespace

void attention(const Call& c) {
  if (c.compute_dtype() == DType::kF64)
    attention_as<double>(c);
  else
    attention_as<float>(c);
}

void attention_backward(const Call& c) {
  if (c.compute_dtype() == DType::kF64)
    attention_backward_as<double>(c);
  else
    attention_backward_as<float>(c);
}

}  // namespace polychip::reference::emulation
