// Emulated layernorm / rmsnorm, after PyTorch's CUDA layer-norm kernels:
//  - row statistics by Welford's algorithm, each of 256 threads folding
//    elements t, t + 256, ... then Welford merges in the block-reduction
//    tree order (reduction_order.hpp); biased variance m2 / D;
//    rstd = rsqrt(var + eps) (rsqrtf);
//  - y = ((x - mean) * rstd) * gamma + beta in float, rounded once;
//  - rmsnorm: sum of squares with fma in the same block order;
//    rstd = rsqrt(sum / D + eps); y = (x * rstd) * gamma;
//  - backward, per row (block order): a = sum(dy gamma), b = sum(dy gamma
//    xhat); dx = (rstd / D) (D dy gamma - a - xhat b) (layer_norm_grad_input);
//    rmsnorm: dx = rstd (dy gamma - x rstd^2 b / D) with b = sum(dy gamma x);
//  - dgamma, dbeta: per column, rows in order, fma accumulation.
#include <cmath>

#include "reference/cuda_math.hpp"
#include "reference/emulation_ops.hpp"
#include "reference/reduction_order.hpp"

namespace polychip::reference::emulation {
namespace {

template <typename A>
struct Welford {
  A mean = 0, m2 = 0, count = 0;
};

template <typename A>
Welford<A> welford_step(Welford<A> w, A x) {
  w.count += 1;
  A delta = x - w.mean;
  w.mean += delta / w.count;
  w.m2 += delta * (x - w.mean);
  return w;
}

template <typename A>
Welford<A> welford_merge(Welford<A> a, Welford<A> b) {
  if (b.count == 0) return a;
  if (a.count == 0) return b;
  A count = a.count + b.count;
  A nb_over_n = b.count / count;
  A delta = b.mean - a.mean;
  return {a.mean + delta * nb_over_n, a.m2 + b.m2 + delta * delta * a.count * nb_over_n, count};
}

template <typename A, typename Value>
A block_sum(int64_t n, Value value) {
  return strided_tree_reduce<A>(
      n, kBlockLanes, A(0), [&](A acc, int64_t j) { return acc + value(j); },
      [](A a, A b) { return a + b; });
}

template <typename A>
void layernorm_as(const Call& c) {
  const auto &x = c.in[0].values, &gamma = c.in[1].values, &beta = c.in[2].values;
  HostTensor &y = c.out[0], &mean_out = c.out[1], &rstd_out = c.out[2];
  const int64_t n = c.in[0].shape[0], d = c.in[0].shape[1];
  const A eps = static_cast<A>(c.f(attr::kEps));
  for (int64_t row = 0; row < n; ++row) {
    const double* xr = x.data() + row * d;
    Welford<A> w = strided_tree_reduce<Welford<A>>(
        d, kBlockLanes, Welford<A>{},
        [&](Welford<A> acc, int64_t j) { return welford_step(acc, static_cast<A>(xr[j])); },
        welford_merge<A>);
    A var = d > 0 ? w.m2 / static_cast<A>(d) : A(0);
    A rstd = cuda_rsqrt(var + eps);
    for (int64_t j = 0; j < d; ++j) {
      A v = (static_cast<A>(xr[j]) - w.mean) * rstd * static_cast<A>(gamma[j]) +
            static_cast<A>(beta[j]);
      y.values[row * d + j] = to_output(y.dtype, v);
    }
    mean_out.values[row] = to_output(mean_out.dtype, w.mean);
    rstd_out.values[row] = to_output(rstd_out.dtype, rstd);
  }
}

template <typename A>
void layernorm_backward_as(const Call& c) {
  const auto &dy = c.in[0].values, &x = c.in[1].values, &gamma = c.in[2].values;
  const auto &mean = c.in[3].values, &rstd = c.in[4].values;
  HostTensor &dx = c.out[0], &dgamma = c.out[1], &dbeta = c.out[2];
  const int64_t n = c.in[1].shape[0], d = c.in[1].shape[1];
  std::vector<A> dg(static_cast<size_t>(d), A(0)), db(static_cast<size_t>(d), A(0));
  for (int64_t row = 0; row < n; ++row) {
    const A mu = static_cast<A>(mean[row]), rs = static_cast<A>(rstd[row]);
    auto at = [&](int64_t j) { return static_cast<size_t>(row * d + j); };
    auto xhat = [&](int64_t j) { return (static_cast<A>(x[at(j)]) - mu) * rs; };
    auto g = [&](int64_t j) { return static_cast<A>(dy[at(j)]) * static_cast<A>(gamma[j]); };
    A a = block_sum<A>(d, g);
    A b = strided_tree_reduce<A>(
        d, kBlockLanes, A(0), [&](A acc, int64_t j) { return std::fma(g(j), xhat(j), acc); },
        [](A p, A q) { return p + q; });
    const A fd = static_cast<A>(d), term1 = rs / fd;
    for (int64_t j = 0; j < d; ++j) {
      dx.values[at(j)] = to_output(dx.dtype, term1 * (fd * g(j) - a - xhat(j) * b));
      dg[j] = std::fma(static_cast<A>(dy[at(j)]), xhat(j), dg[j]);
      db[j] += static_cast<A>(dy[at(j)]);
    }
  }
  for (int64_t j = 0; j < d; ++j) {
    dgamma.values[j] = to_output(dgamma.dtype, dg[j]);
    dbeta.values[j] = to_output(dbeta.dtype, db[j]);
  }
}

template <typename A>
void rmsnorm_as(const Call& c) {
  const auto &x = c.in[0].values, &gamma = c.in[1].values;
  HostTensor &y = c.out[0], &rstd_out = c.out[1];
  const int64_t n = c.in[0].shape[0], d = c.in[0].shape[1];
  const A eps = static_cast<A>(c.f(attr::kEps));
  for (int64_t row = 0; row < n; ++row) {
    const double* xr = x.data() + row * d;
    A sq = strided_tree_reduce<A>(
        d, kBlockLanes, A(0),
        [&](A acc, int64_t j) {
          return std::fma(static_cast<A>(xr[j]), static_cast<A>(xr[j]), acc);
        },
        [](A p, A q) { return p + q; });
    A rstd = cuda_rsqrt(sq / static_cast<A>(d) + eps);
    for (int64_t j = 0; j < d; ++j)
      y.values[row * d + j] =
          to_output(y.dtype, static_cast<A>(xr[j]) * rstd * static_cast<A>(gamma[j]));
    rstd_out.values[row] = to_output(rstd_out.dtype, rstd);
  }
}

template <typename A>
void rmsnorm_backward_as(const Call& c) {
  const auto &dy = c.in[0].values, &x = c.in[1].values, &gamma = c.in[2].values;
  const auto& rstd = c.in[3].values;
  HostTensor &dx = c.out[0], &dgamma = c.out[1];
  const int64_t n = c.in[1].shape[0], d = c.in[1].shape[1];
  std::vector<A> dg(static_cast<size_t>(d), A(0));
  for (int64_t row = 0; row < n; ++row) {
    const A rs = static_cast<A>(rstd[row]);
    auto at = [&](int64_t j) { return static_cast<size_t>(row * d + j); };
    auto g = [&](int64_t j) { return static_cast<A>(dy[at(j)]) * static_cast<A>(gamma[j]); };
    A b = strided_tree_reduce<A>(
        d, kBlockLanes, A(0),
        [&](A acc, int64_t j) { return std::fma(g(j), static_cast<A>(x[at(j)]), acc); },
        [](A p, A q) { return p + q; });
    const A coef = rs * rs * b / static_cast<A>(d);
    for (int64_t j = 0; j < d; ++j) {
      A xj = static_cast<A>(x[at(j)]);
      dx.values[at(j)] = to_output(dx.dtype, rs * (g(j) - xj * coef));
      dg[j] = std::fma(static_cast<A>(dy[at(j)]), xj * rs, dg[j]);
    }
  }
  for (int64_t j = 0; j < d; ++j) dgamma.values[j] = to_output(dgamma.dtype, dg[j]);
}

}  // namespace

#define POLYCHIP_EMULATION_DISPATCH(name) \
  void name(const Call& c) {              \
    if (c.compute_dtype() == DType::kF64) \
      name##_as<double>(c);               \
    else                                  \
      name##_as<float>(c);                \
  }
POLYCHIP_EMULATION_DISPATCH(layernorm)
POLYCHIP_EMULATION_DISPATCH(layernorm_backward)
POLYCHIP_EMULATION_DISPATCH(rmsnorm)
POLYCHIP_EMULATION_DISPATCH(rmsnorm_backward)
#undef POLYCHIP_EMULATION_DISPATCH

}  // namespace polychip::reference::emulation
