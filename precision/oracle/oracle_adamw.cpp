// Oracle AdamW step (decoupled weight decay, bias-corrected moments), in
// long double from the f32 master weights and the gradient's exact value.
#include <cmath>

#include "precision/oracle/oracle_ops.hpp"

namespace polychip::precision::oracle_detail {

void adamw(const Call& c) {
  using LD = long double;
  const auto &p = c.in[0].values, &g = c.in[1].values, &m = c.in[2].values, &v = c.in[3].values;
  auto &p_out = c.out[0].values, &m_out = c.out[1].values, &v_out = c.out[2].values;
  const LD lr = c.f(attr::kLr), b1 = c.f(attr::kBeta1), b2 = c.f(attr::kBeta2);
  const LD eps = c.f(attr::kAdamEps), wd = c.f(attr::kWeightDecay);
  const LD t = static_cast<LD>(c.i(attr::kStep));
  // 1 - b^t without cancellation for b near 1.
  const LD bc1 = -std::expm1(t * std::log1p(-(1 - b1)));
  const LD bc2 = -std::expm1(t * std::log1p(-(1 - b2)));
  for (size_t k = 0; k < p.size(); ++k) {
    LD gk = g[k];
    LD m1 = b1 * m[k] + (1 - b1) * gk;
    LD v1 = b2 * v[k] + (1 - b2) * gk * gk;
    LD update = wd * p[k] + (m1 / bc1) / (std::sqrt(v1 / bc2) + eps);
    p_out[k] = static_cast<double>(p[k] - lr * update);
    m_out[k] = static_cast<double>(m1);
    v_out[k] = static_cast<double>(v1);
  }
}

}  // namespace polychip::precision::oracle_detail
