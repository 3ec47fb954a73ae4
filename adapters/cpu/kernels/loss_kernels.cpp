// cross_entropy forward and backward on row-major [N, C] logits, in double
// per row (max-subtracted log-sum-exp). Targets are checked before any
// output is written.
#include <cmath>
#include <limits>

#include "element_types.hpp"
#include "index_dispatch.hpp"
#include "kernel_registry.hpp"

namespace polychip::cpu {
namespace {

template <class S>
double row_logsumexp(const S* row, int64_t classes) {
  double m = -std::numeric_limits<double>::infinity();
  bool has_nan = false;
  for (int64_t j = 0; j < classes; ++j) {
    const double v = to_f64(row[j]);
    has_nan |= std::isnan(v);
    m = std::fmax(m, v);
  }
  if (has_nan) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(m)) return m;  // all -Inf (-Inf) or some +Inf (+Inf)
  double sum = 0;
  for (int64_t j = 0; j < classes; ++j) sum += std::exp(to_f64(row[j]) - m);
  return m + std::log(sum);
}

// Both ops read logits c[0] [N, C] and targets c[1] [N], each in [0, C).
template <class Body>
polychip_status visit_logits_and_targets(const KernelCall& c, int64_t n, int64_t classes,
                                         Body&& body) {
  return visit_float_with_checked_indices(c, 0, 1, "targets", n, classes, "classes C", body);
}

// logits, targets -> loss (f32).
polychip_status cross_entropy(const KernelCall& c) {
  const int64_t n = c[0].shape[0], classes = c[0].shape[1];
  return visit_logits_and_targets(c, n, classes, [&](auto s, const auto* targets) {
    using S = decltype(s);
    for (int64_t r = 0; r < n; ++r) {
      const S* row = c[0].as<S>() + r * classes;
      c[2].as<float>()[r] =
          static_cast<float>(row_logsumexp(row, classes) - to_f64(row[targets[r]]));
    }
  });
}

// logits, targets, dloss (f32) -> dlogits = dloss (softmax - onehot).
polychip_status cross_entropy_backward(const KernelCall& c) {
  const int64_t n = c[0].shape[0], classes = c[0].shape[1];
  return visit_logits_and_targets(c, n, classes, [&](auto s, const auto* targets) {
    using S = decltype(s);
    for (int64_t r = 0; r < n; ++r) {
      const S* row = c[0].as<S>() + r * classes;
      S* out = c[3].as<S>() + r * classes;
      const double lse = row_logsumexp(row, classes);
      const double g = c[2].as<float>()[r];
      for (int64_t j = 0; j < classes; ++j) {
        const double p = std::exp(to_f64(row[j]) - lse);
        out[j] = from_f64<S>(g * (p - (j == static_cast<int64_t>(targets[r]) ? 1.0 : 0.0)));
      }
    }
  });
}

const NamedKernel kKernels[] = {
    {"cross_entropy", cross_entropy},
    {"cross_entropy_backward", cross_entropy_backward},
};

}  // namespace

std::span<const NamedKernel> loss_kernels() { return kKernels; }

}  // namespace polychip::cpu
