// Oracle scaled-dot-product attention per (batch, head), in long double.
// Forward: s_ij = scale q_i . k_j (j <= i when causal), lse_i = log sum_j
// exp(s_ij), o_i = sum_j exp(s_ij - lse_i) v_j.
// Backward (the formula every fused kernel evaluates, on the o and lse it is
// given): P_ij = exp(s_ij - lse_i), D_i = do_i . o_i, dS_ij = P_ij (do_i . v_j
// - D_i); dq_i = scale sum_j dS_ij k_j, dk_j = scale sum_i dS_ij q_i,
// dv_j = sum_i P_ij do_i.
#include <cmath>
#include <limits>

#include "precision/oracle/exact_sum.hpp"
#include "precision/oracle/oracle_ops.hpp"

namespace polychip::precision::oracle_detail {
namespace {

using LD = long double;

LD dot(const double* a, const double* b, int64_t d) {
  LD acc = 0;
  for (int64_t k = 0; k < d; ++k) acc += static_cast<LD>(a[k]) * b[k];
  return acc;
}

struct Dims {
  int64_t heads_total, s, d;
  bool causal;
  LD scale;
  int64_t keys(int64_t i) const { return causal ? i + 1 : s; }  // keys seen by query i
};

Dims dims_of(const Call& c, const Shape& q) {
  return {q[0] * q[1], q[2], q[3], c.i(attr::kCausal) != 0, c.f(attr::kScale)};
}

}  // namespace

void attention(const Call& c) {
  const auto &q = c.in[0].values, &k = c.in[1].values, &v = c.in[2].values;
  auto &o = c.out[0].values, &lse = c.out[1].values;
  const Dims dm = dims_of(c, c.in[0].shape);
  std::vector<LD> scores(static_cast<size_t>(dm.s));
  std::vector<LD> acc(static_cast<size_t>(dm.d));
  for (int64_t bh = 0; bh < dm.heads_total; ++bh) {
    const size_t base = bh * dm.s * dm.d;
    for (int64_t i = 0; i < dm.s; ++i) {
      const int64_t keys = dm.keys(i);
      LD mx = -std::numeric_limits<LD>::infinity();
      for (int64_t j = 0; j < keys; ++j) {
        scores[j] = dm.scale * dot(&q[base + i * dm.d], &k[base + j * dm.d], dm.d);
        if (scores[j] > mx || std::isnan(scores[j])) mx = scores[j];
      }
      ExactSum sum;
      for (int64_t j = 0; j < keys; ++j) sum.add(std::exp(scores[j] - mx));
      const LD total = sum.value();
      std::fill(acc.begin(), acc.end(), 0.0L);
      for (int64_t j = 0; j < keys; ++j) {
        LD p = std::exp(scores[j] - mx) / total;
        for (int64_t x = 0; x < dm.d; ++x) acc[x] += p * v[base + j * dm.d + x];
      }
      for (int64_t x = 0; x < dm.d; ++x) o[base + i * dm.d + x] = static_cast<double>(acc[x]);
      lse[bh * dm.s + i] = static_cast<double>(mx + std::log(total));
    }
  }
}

void attention_backward(const Call& c) {
  const auto &dout = c.in[0].values, &q = c.in[1].values, &k = c.in[2].values;
  const auto &v = c.in[3].values, &o = c.in[4].values, &lse = c.in[5].values;
  auto &dq = c.out[0].values, &dk = c.out[1].values, &dv = c.out[2].values;
  const Dims dm = dims_of(c, c.in[1].shape);
  const size_t head_size = static_cast<size_t>(dm.s * dm.d);
  std::vector<LD> dq_acc(head_size), dk_acc(head_size), dv_acc(head_size);
  for (int64_t bh = 0; bh < dm.heads_total; ++bh) {
    const size_t base = bh * head_size;
    std::fill(dq_acc.begin(), dq_acc.end(), 0.0L);
    std::fill(dk_acc.begin(), dk_acc.end(), 0.0L);
    std::fill(dv_acc.begin(), dv_acc.end(), 0.0L);
    for (int64_t i = 0; i < dm.s; ++i) {
      const double* qi = &q[base + i * dm.d];
      const double* doi = &dout[base + i * dm.d];
      const LD big_d = dot(doi, &o[base + i * dm.d], dm.d);
      const LD lse_i = lse[bh * dm.s + i];
      for (int64_t j = 0; j < dm.keys(i); ++j) {
        const double* kj = &k[base + j * dm.d];
        const LD p = std::exp(dm.scale * dot(qi, kj, dm.d) - lse_i);
        const LD ds = p * (dot(doi, &v[base + j * dm.d], dm.d) - big_d);
        for (int64_t x = 0; x < dm.d; ++x) {
          dv_acc[j * dm.d + x] += p * doi[x];
          dq_acc[i * dm.d + x] += ds * kj[x];
          dk_acc[j * dm.d + x] += ds * qi[x];
        }
      }
    }
    for (size_t x = 0; x < head_size; ++x) {
      dq[base + x] = static_cast<double>(dm.scale * dq_acc[x]);
      dk[base + x] = static_cast<double>(dm.scale * dk_acc[x]);
      dv[base + x] = static_cast<double>(dv_acc[x]);
    }
  }
}

}  // namespace polychip::precision::oracle_detail
