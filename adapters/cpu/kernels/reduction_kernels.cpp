// Reductions along one axis (any strides on x and y). Sums accumulate in
// double in index order (deterministic; at least as accurate as the f32
// accumulation the contract asks of f16/bf16) and round once.
#include <cmath>
#include <limits>

#include "element_types.hpp"
#include "kernel_registry.hpp"
#include "polychip/op_contract.hpp"
#include "strided_loop.hpp"

namespace polychip::cpu {
namespace {

int normalized_axis(const KernelCall& c) {
  int64_t axis = c.i(attr::kAxis);
  return static_cast<int>(axis < 0 ? axis + c[0].rank : axis);
}

// Calls lane(x_offset, y_offset, length, x_stride) once per output element.
template <class F>
void for_each_lane(const KernelCall& c, F&& lane) {
  const TensorView &x = c[0], &y = c[1];
  const int axis = normalized_axis(c);
  const int64_t len = x.shape[axis], stride = x.strides[axis];
  for_each_offset<2>(y.rank, y.shape, {x.strides, y.strides},
                     [&](const auto& o) { lane(o[0], o[1], len, stride); });
}

template <class S>
double lane_sum(const S* x, int64_t len, int64_t stride) {
  double acc = 0;
  for (int64_t k = 0; k < len; ++k) acc += to_f64(x[k * stride]);
  return acc;
}

polychip_status reduce_sum(const KernelCall& c) {
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    for_each_lane(c, [&](int64_t xo, int64_t yo, int64_t len, int64_t st) {
      c[1].as<S>()[yo] = from_f64<S>(lane_sum(c[0].as<S>() + xo, len, st));
    });
    return kOk;
  });
}

polychip_status reduce_mean(const KernelCall& c) {
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    for_each_lane(c, [&](int64_t xo, int64_t yo, int64_t len, int64_t st) {
      c[1].as<S>()[yo] =
          from_f64<S>(lane_sum(c[0].as<S>() + xo, len, st) / static_cast<double>(len));
    });
    return kOk;
  });
}

polychip_status reduce_max(const KernelCall& c) {
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    for_each_lane(c, [&](int64_t xo, int64_t yo, int64_t len, int64_t st) {
      const S* x = c[0].as<S>() + xo;
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < len; ++k) {
        const double v = to_f64(x[k * st]);
        if (std::isnan(v)) {
          m = v;
          break;
        }
        if (v > m) m = v;
      }
      c[1].as<S>()[yo] = from_f64<S>(m);
    });
    return kOk;
  });
}

// The index of the first maximum; the first NaN wins over everything.
polychip_status argmax(const KernelCall& c) {
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    return visit_index(c[1].dtype, c.op, [&](auto i) {
      using I = decltype(i);
      for_each_lane(c, [&](int64_t xo, int64_t yo, int64_t len, int64_t st) {
        const S* x = c[0].as<S>() + xo;
        int64_t best = 0;
        double m = len > 0 ? to_f64(x[0]) : 0.0;
        for (int64_t k = 1; k < len && !std::isnan(m); ++k) {
          const double v = to_f64(x[k * st]);
          if (std::isnan(v) || v > m) {
            m = v;
            best = k;
          }
        }
        c[1].as<I>()[yo] = static_cast<I>(best);
      });
      return kOk;
    });
  });
}

// sqrt(sum x^2); rescaled by max |x| when the plain sum over- or
// underflows double (only reachable from f64 inputs).
template <class S>
double lane_l2_norm(const S* x, int64_t len, int64_t stride) {
  double acc = 0, max_abs = 0;
  for (int64_t k = 0; k < len; ++k) {
    const double v = to_f64(x[k * stride]);
    acc += v * v;
    max_abs = std::fmax(max_abs, std::fabs(v));
  }
  const bool overflow = std::isinf(acc) && std::isfinite(max_abs);
  const bool underflow = acc < std::numeric_limits<double>::min() && max_abs > 0;
  if (!overflow && !underflow) return std::sqrt(acc);
  double scaled = 0;
  for (int64_t k = 0; k < len; ++k) {
    const double v = to_f64(x[k * stride]) / max_abs;
    scaled += v * v;
  }
  return max_abs * std::sqrt(scaled);
}

polychip_status l2_norm(const KernelCall& c) {
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    for_each_lane(c, [&](int64_t xo, int64_t yo, int64_t len, int64_t st) {
      c[1].as<S>()[yo] = from_f64<S>(lane_l2_norm(c[0].as<S>() + xo, len, st));
    });
    return kOk;
  });
}

const NamedKernel kKernels[] = {
    {"reduce_sum", reduce_sum}, {"reduce_mean", reduce_mean}, {"reduce_max", reduce_max},
    {"argmax", argmax},         {"l2_norm", l2_norm},
};

}  // namespace

std::span<const NamedKernel> reduction_kernels() { return kKernels; }

}  // namespace polychip::cpu
