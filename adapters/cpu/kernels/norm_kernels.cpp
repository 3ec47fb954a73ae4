// layernorm and rmsnorm over the last dimension of row-major [N, D]
// tensors, forward and backward. Statistics are computed in double (two
// passes for the variance), saved as f32; outputs round once. The
// sim.poor_variance defect computes the layernorm variance as
// E[x^2] - E[x]^2 in one f32 pass.
#include <algorithm>
#include <cmath>
#include <vector>

#include "element_types.hpp"
#include "kernel_registry.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::cpu {
namespace {

struct RowStats {
  double mean, rstd;
};

template <class S>
RowStats layernorm_stats(const S* x, int64_t d, double eps, bool one_pass_f32) {
  if (one_pass_f32) {
    float sum = 0, sum_sq = 0;
    for (int64_t j = 0; j < d; ++j) {
      const float v = static_cast<float>(to_f64(x[j]));
      sum += v;
      sum_sq += v * v;
    }
    const float mean = sum / static_cast<float>(d);
    const float var = std::max(0.0f, sum_sq / static_cast<float>(d) - mean * mean);
    return {mean, 1.0 / std::sqrt(static_cast<double>(var) + eps)};
  }
  double sum = 0;
  for (int64_t j = 0; j < d; ++j) sum += to_f64(x[j]);
  const double mean = sum / static_cast<double>(d);
  double sq = 0;
  for (int64_t j = 0; j < d; ++j) {
    const double t = to_f64(x[j]) - mean;
    sq += t * t;
  }
  return {mean, 1.0 / std::sqrt(sq / static_cast<double>(d) + eps)};
}

// x, gamma, beta -> y, mean (f32), rstd (f32).
polychip_status layernorm(const KernelCall& c) {
  const int64_t n = c[0].shape[0], d = c[0].shape[1];
  const double eps = c.f(attr::kEps);
  const bool poor = c.numerics->one_pass_f32_variance;
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    const S* gamma = c[1].as<S>();
    const S* beta = c[2].as<S>();
    for (int64_t r = 0; r < n; ++r) {
      const S* x = c[0].as<S>() + r * d;
      S* y = c[3].as<S>() + r * d;
      const RowStats st = layernorm_stats(x, d, eps, poor);
      for (int64_t j = 0; j < d; ++j)
        y[j] = from_f64<S>((to_f64(x[j]) - st.mean) * st.rstd * to_f64(gamma[j]) + to_f64(beta[j]));
      c[4].as<float>()[r] = static_cast<float>(st.mean);
      c[5].as<float>()[r] = static_cast<float>(st.rstd);
    }
    return kOk;
  });
}

// dy, x, gamma, mean, rstd -> dx, dgamma, dbeta. With xhat = (x - mean)
// rstd and g = dy gamma: dx = rstd (g - mean(g) - xhat mean(g xhat)).
polychip_status layernorm_backward(const KernelCall& c) {
  const int64_t n = c[1].shape[0], d = c[1].shape[1];
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    const S* gamma = c[2].as<S>();
    std::vector<double> dgamma(d, 0.0), dbeta(d, 0.0), xhat(d), g(d);
    for (int64_t r = 0; r < n; ++r) {
      const S* dy = c[0].as<S>() + r * d;
      const S* x = c[1].as<S>() + r * d;
      const double mean = c[3].as<float>()[r], rstd = c[4].as<float>()[r];
      double sum_g = 0, sum_gx = 0;
      for (int64_t j = 0; j < d; ++j) {
        const double dyv = to_f64(dy[j]);
        xhat[j] = (to_f64(x[j]) - mean) * rstd;
        g[j] = dyv * to_f64(gamma[j]);
        sum_g += g[j];
        sum_gx += g[j] * xhat[j];
        dgamma[j] += dyv * xhat[j];
        dbeta[j] += dyv;
      }
      const double mg = sum_g / d, mgx = sum_gx / d;
      S* dx = c[5].as<S>() + r * d;
      for (int64_t j = 0; j < d; ++j) dx[j] = from_f64<S>(rstd * (g[j] - mg - xhat[j] * mgx));
    }
    for (int64_t j = 0; j < d; ++j) {
      c[6].as<S>()[j] = from_f64<S>(dgamma[j]);
      c[7].as<S>()[j] = from_f64<S>(dbeta[j]);
    }
    return kOk;
  });
}

// x, gamma -> y, rstd (f32).
polychip_status rmsnorm(const KernelCall& c) {
  const int64_t n = c[0].shape[0], d = c[0].shape[1];
  const double eps = c.f(attr::kEps);
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    const S* gamma = c[1].as<S>();
    for (int64_t r = 0; r < n; ++r) {
      const S* x = c[0].as<S>() + r * d;
      S* y = c[2].as<S>() + r * d;
      double sq = 0;
      for (int64_t j = 0; j < d; ++j) sq += to_f64(x[j]) * to_f64(x[j]);
      const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(d) + eps);
      for (int64_t j = 0; j < d; ++j) y[j] = from_f64<S>(to_f64(x[j]) * rstd * to_f64(gamma[j]));
      c[3].as<float>()[r] = static_cast<float>(rstd);
    }
    return kOk;
  });
}

// dy, x, gamma, rstd -> dx, dgamma. With g = dy gamma:
// dx = rstd (g - x rstd^2 mean(g x)); dgamma = sum over rows of dy x rstd.
polychip_status rmsnorm_backward(const KernelCall& c) {
  const int64_t n = c[1].shape[0], d = c[1].shape[1];
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    const S* gamma = c[2].as<S>();
    std::vector<double> dgamma(d, 0.0);
    for (int64_t r = 0; r < n; ++r) {
      const S* dy = c[0].as<S>() + r * d;
      const S* x = c[1].as<S>() + r * d;
      const double rstd = c[3].as<float>()[r];
      double sum_gx = 0;
      for (int64_t j = 0; j < d; ++j) {
        const double dyv = to_f64(dy[j]), xv = to_f64(x[j]);
        sum_gx += dyv * to_f64(gamma[j]) * xv;
        dgamma[j] += dyv * xv * rstd;
      }
      const double k = rstd * rstd * sum_gx / static_cast<double>(d);
      S* dx = c[4].as<S>() + r * d;
      for (int64_t j = 0; j < d; ++j)
        dx[j] = from_f64<S>(rstd * (to_f64(dy[j]) * to_f64(gamma[j]) - to_f64(x[j]) * k));
    }
    for (int64_t j = 0; j < d; ++j) c[5].as<S>()[j] = from_f64<S>(dgamma[j]);
    return kOk;
  });
}

const NamedKernel kKernels[] = {
    {"layernorm", layernorm},
    {"layernorm_backward", layernorm_backward},
    {"rmsnorm", rmsnorm},
    {"rmsnorm_backward", rmsnorm_backward},
};

}  // namespace

std::span<const NamedKernel> norm_kernels() { return kKernels; }

}  // namespace polychip::cpu
