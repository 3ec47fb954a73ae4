// Oracle layernorm / rmsnorm and their gradients, in long double with
// compensated sums and a two-pass variance. The backward kernels use the
// saved statistics (mean, rstd) they are given, exactly as the contract's
// gradient formulas do, so they measure the kernel and not the forward.
#include <cmath>

#include "precision/oracle/exact_sum.hpp"
#include "precision/oracle/oracle_ops.hpp"

namespace polychip::precision::oracle_detail {
namespace {
using LD = long double;
}

void layernorm(const Call& c) {
  const auto &x = c.in[0].values, &gamma = c.in[1].values, &beta = c.in[2].values;
  auto &y = c.out[0].values, &mean_out = c.out[1].values, &rstd_out = c.out[2].values;
  const int64_t n = c.in[0].shape[0], d = c.in[0].shape[1];
  const LD eps = c.f(attr::kEps);
  for (int64_t row = 0; row < n; ++row) {
    const double* xr = x.data() + row * d;
    ExactSum sum;
    for (int64_t j = 0; j < d; ++j) sum.add(xr[j]);
    LD mean = sum.value() / d;
    ExactSum sq;
    for (int64_t j = 0; j < d; ++j) sq.add((xr[j] - mean) * (xr[j] - mean));
    LD rstd = 1 / std::sqrt(sq.value() / d + eps);
    for (int64_t j = 0; j < d; ++j)
      y[row * d + j] = static_cast<double>((xr[j] - mean) * rstd * gamma[j] + beta[j]);
    mean_out[row] = static_cast<double>(mean);
    rstd_out[row] = static_cast<double>(rstd);
  }
}

// xhat = (x - mean) rstd, g = dy gamma:
// dx = rstd (g - mean(g) - xhat mean(g xhat)); dgamma = sum_n dy xhat;
// dbeta = sum_n dy.
void layernorm_backward(const Call& c) {
  const auto &dy = c.in[0].values, &x = c.in[1].values, &gamma = c.in[2].values;
  const auto &mean = c.in[3].values, &rstd = c.in[4].values;
  auto &dx = c.out[0].values, &dgamma = c.out[1].values, &dbeta = c.out[2].values;
  const int64_t n = c.in[1].shape[0], d = c.in[1].shape[1];
  std::vector<ExactSum> dg(d), db(d);
  for (int64_t row = 0; row < n; ++row) {
    const LD mu = mean[row], rs = rstd[row];
    ExactSum sg, sgx;
    for (int64_t j = 0; j < d; ++j) {
      size_t k = row * d + j;
      LD xhat = (x[k] - mu) * rs, g = static_cast<LD>(dy[k]) * gamma[j];
      sg.add(g);
      sgx.add(g * xhat);
      dg[j].add(static_cast<LD>(dy[k]) * xhat);
      db[j].add(dy[k]);
    }
    LD mg = sg.value() / d, mgx = sgx.value() / d;
    for (int64_t j = 0; j < d; ++j) {
      size_t k = row * d + j;
      LD xhat = (x[k] - mu) * rs, g = static_cast<LD>(dy[k]) * gamma[j];
      dx[k] = static_cast<double>(rs * (g - mg - xhat * mgx));
    }
  }
  for (int64_t j = 0; j < d; ++j) {
    dgamma[j] = static_cast<double>(dg[j].value());
    dbeta[j] = static_cast<double>(db[j].value());
  }
}

void rmsnorm(const Call& c) {
  const auto &x = c.in[0].values, &gamma = c.in[1].values;
  auto &y = c.out[0].values, &rstd_out = c.out[1].values;
  const int64_t n = c.in[0].shape[0], d = c.in[0].shape[1];
  const LD eps = c.f(attr::kEps);
  for (int64_t row = 0; row < n; ++row) {
    const double* xr = x.data() + row * d;
    ExactSum sq;
    for (int64_t j = 0; j < d; ++j) sq.add(static_cast<LD>(xr[j]) * xr[j]);
    LD rstd = 1 / std::sqrt(sq.value() / d + eps);
    for (int64_t j = 0; j < d; ++j) y[row * d + j] = static_cast<double>(xr[j] * rstd * gamma[j]);
    rstd_out[row] = static_cast<double>(rstd);
  }
}

// g = dy gamma: dx = rstd (g - x rstd^2 mean(g x)); dgamma = sum_n dy x rstd.
void rmsnorm_backward(const Call& c) {
  const auto &dy = c.in[0].values, &x = c.in[1].values, &gamma = c.in[2].values;
  const auto& rstd = c.in[3].values;
  auto &dx = c.out[0].values, &dgamma = c.out[1].values;
  const int64_t n = c.in[1].shape[0], d = c.in[1].shape[1];
  std::vector<ExactSum> dg(d);
  for (int64_t row = 0; row < n; ++row) {
    const LD rs = rstd[row];
    ExactSum sgx;
    for (int64_t j = 0; j < d; ++j) {
      size_t k = row * d + j;
      sgx.add(static_cast<LD>(dy[k]) * gamma[j] * x[k]);
      dg[j].add(static_cast<LD>(dy[k]) * x[k] * rs);
    }
    LD mgx = sgx.value() / d;
    for (int64_t j = 0; j < d; ++j) {
      size_t k = row * d + j;
      LD g = static_cast<LD>(dy[k]) * gamma[j];
      dx[k] = static_cast<double>(rs * (g - x[k] * rs * rs * mgx));
    }
  }
  for (int64_t j = 0; j < d; ++j) dgamma[j] = static_cast<double>(dg[j].value());
}

}  // namespace polychip::precision::oracle_detail
