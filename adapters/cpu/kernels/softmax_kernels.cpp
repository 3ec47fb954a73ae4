// softmax, log_softmax and their backward along any axis of row-major
// tensors, computed in double per lane (max subtraction, then one
// rounding). The sim.naive_softmax defect skips the max subtraction and
// evaluates exp in the device's working precision (f32, f64 for f64), so
// inputs above ~88.7 overflow.
#include <cmath>
#include <limits>
#include <vector>

#include "element_types.hpp"
#include "kernel_registry.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::cpu {
namespace {

// A row-major tensor seen as [outer, len, inner] around the axis.
struct Lanes {
  int64_t outer = 1, len = 1, inner = 1;
};

Lanes lanes_of(const KernelCall& c) {
  const TensorView& x = c[0];
  int64_t axis = c.i(attr::kAxis);
  if (axis < 0) axis += x.rank;
  Lanes l;
  for (int d = 0; d < x.rank; ++d) {
    if (d < axis) l.outer *= x.shape[d];
    if (d == axis) l.len = x.shape[d];
    if (d > axis) l.inner *= x.shape[d];
  }
  return l;
}

// Calls f(base, stride) per lane (element offsets of the lane's first
// element and its stride).
template <class F>
void for_each_lane(const Lanes& l, F&& f) {
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t i = 0; i < l.inner; ++i) f(o * l.len * l.inner + i, l.inner);
}

// exp in the device's working precision for the naive defect.
template <class S>
double working_exp(double x) {
  if constexpr (std::is_same_v<S, double>) {
    return std::exp(x);
  } else {
    return std::exp(static_cast<float>(x));  // f32 expf: overflows above ~88.72
  }
}

template <class S>
void softmax_lane(const S* x, S* y, int64_t len, int64_t st, bool log_form, bool naive,
                  std::vector<double>& scratch) {
  scratch.resize(static_cast<size_t>(len));
  if (naive) {
    // The defect: no max subtraction, f32 sum.
    using W = std::conditional_t<std::is_same_v<S, double>, double, float>;
    W sum = 0;
    for (int64_t k = 0; k < len; ++k) {
      scratch[k] = static_cast<W>(working_exp<S>(to_f64(x[k * st])));
      sum += static_cast<W>(scratch[k]);
    }
    for (int64_t k = 0; k < len; ++k) {
      const double v = log_form ? static_cast<W>(to_f64(x[k * st]) - std::log(static_cast<W>(sum)))
                                : static_cast<W>(scratch[k] / sum);
      y[k * st] = from_f64<S>(v);
    }
    return;
  }
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < len; ++k) {
    scratch[k] = to_f64(x[k * st]);
    m = std::isnan(scratch[k]) || std::isnan(m) ? std::numeric_limits<double>::quiet_NaN()
                                                : std::fmax(m, scratch[k]);
  }
  double sum = 0;
  for (int64_t k = 0; k < len; ++k) sum += std::exp(scratch[k] - m);
  const double log_sum = std::log(sum);
  for (int64_t k = 0; k < len; ++k) {
    const double v = log_form ? scratch[k] - m - log_sum : std::exp(scratch[k] - m) / sum;
    y[k * st] = from_f64<S>(v);
  }
}

template <bool kLogForm>
polychip_status softmax(const KernelCall& c) {
  const Lanes l = lanes_of(c);
  const bool naive = c.numerics->softmax_without_max;
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    std::vector<double> scratch;
    for_each_lane(l, [&](int64_t base, int64_t st) {
      softmax_lane(c[0].as<S>() + base, c[1].as<S>() + base, l.len, st, kLogForm, naive, scratch);
    });
    return kOk;
  });
}

// softmax_backward: dx = y (dy - sum(dy y)); log_softmax_backward:
// dx = dy - exp(y) sum(dy).
template <bool kLogForm>
polychip_status softmax_backward(const KernelCall& c) {
  const Lanes l = lanes_of(c);
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    for_each_lane(l, [&](int64_t base, int64_t st) {
      const S* dy = c[0].as<S>() + base;
      const S* y = c[1].as<S>() + base;
      S* dx = c[2].as<S>() + base;
      double dot = 0;
      for (int64_t k = 0; k < l.len; ++k)
        dot += kLogForm ? to_f64(dy[k * st]) : to_f64(dy[k * st]) * to_f64(y[k * st]);
      for (int64_t k = 0; k < l.len; ++k) {
        const double g = to_f64(dy[k * st]), yv = to_f64(y[k * st]);
        dx[k * st] = from_f64<S>(kLogForm ? g - std::exp(yv) * dot : yv * (g - dot));
      }
    });
    return kOk;
  });
}

const NamedKernel kKernels[] = {
    {"softmax", softmax<false>},
    {"log_softmax", softmax<true>},
    {"softmax_backward", softmax_backward<false>},
    {"log_softmax_backward", softmax_backward<true>},
};

}  // namespace

std::span<const NamedKernel> softmax_kernels() { return kKernels; }

}  // namespace polychip::cpu
