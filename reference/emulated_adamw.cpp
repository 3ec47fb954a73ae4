// Emulated AdamW as PyTorch's fused CUDA AdamW (_fused_adamw_) computes it,
// in float: bias corrections 1 - beta^step in double on the host; then
//   p = p - (lr wd) p;  m = beta1 m + (1 - beta1) g;
//   v = beta2 v + (1 - beta2) g g;  denom = sqrt(v) / sqrt(bc2) + eps;
//   p = p - (lr / bc1) m / denom.
// (f64 parameters: the same in double.)
#include <cmath>

#include "reference/emulation_ops.hpp"

namespace polychip::reference::emulation {
namespace {

template <typename A>
void adamw_as(const Call& c) {
  const auto &p = c.in[0].values, &g = c.in[1].values, &m = c.in[2].values, &v = c.in[3].values;
  HostTensor &p_out = c.out[0], &m_out = c.out[1], &v_out = c.out[2];
  const double lr = c.f(attr::kLr), b1 = c.f(attr::kBeta1), b2 = c.f(attr::kBeta2);
  const double step = static_cast<double>(c.i(attr::kStep));
  const A decay = static_cast<A>(lr * c.f(attr::kWeightDecay));
  const A step_size = static_cast<A>(lr / (1 - std::pow(b1, step)));
  const A bc2_sqrt = static_cast<A>(std::sqrt(1 - std::pow(b2, step)));
  const A beta1 = static_cast<A>(b1), beta2 = static_cast<A>(b2);
  const A eps = static_cast<A>(c.f(attr::kAdamEps));
  for (size_t k = 0; k < p.size(); ++k) {
    A param = static_cast<A>(p[k]), grad = static_cast<A>(g[k]);
    param = param - decay * param;
    A m1 = beta1 * static_cast<A>(m[k]) + (A(1) - beta1) * grad;
    A v1 = beta2 * static_cast<A>(v[k]) + (A(1) - beta2) * grad * grad;
    A denom = std::sqrt(v1) / bc2_sqrt + eps;
    param = param - step_size * m1 / denom;
    p_out.values[k] = to_output(p_out.dtype, param);
    m_out.values[k] = to_output(m_out.dtype, m1);
    v_out.values[k] = to_output(v_out.dtype, v1);
  }
}

}  // namespace

void adamw(const Call& c) {
  // The compute dtype is the gradient's; master weights are f32 (f64 only
  // when the gradient is f64 and the contract allows it).
  if (c.in[1].dtype == DType::kF64)
    adamw_as<double>(c);
  else
    adamw_as<float>(c);
}

}  // namespace polychip::reference::emulation
