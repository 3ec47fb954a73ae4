// Elementwise ops: any strides on every tensor (0 = broadcast on inputs).
// Each element is computed in double from the stored inputs and rounded
// once to the output dtype.
#include <cmath>
#include <string>

#include "element_types.hpp"
#include "elementwise_math.hpp"
#include "kernel_registry.hpp"
#include "polychip/op_contract.hpp"
#include "strided_loop.hpp"

namespace polychip::cpu {
namespace {

template <class S, class Fn>
void map_unary(const TensorView& x, const TensorView& y, Fn fn) {
  const S* xp = x.as<S>();
  S* yp = y.as<S>();
  for_each_element([&](const auto& o) { yp[o[1]] = from_f64<S>(fn(to_f64(xp[o[0]]))); }, x, y);
}

template <class S, class Fn>
void map_binary(const TensorView& a, const TensorView& b, const TensorView& out, Fn fn) {
  const S* ap = a.as<S>();
  const S* bp = b.as<S>();
  S* op = out.as<S>();
  for_each_element(
      [&](const auto& o) { op[o[2]] = from_f64<S>(fn(to_f64(ap[o[0]]), to_f64(bp[o[1]]))); }, a, b,
      out);
}

template <class X, class Y>
void map_unary_cast(const TensorView& x, const TensorView& y) {
  const X* xp = x.as<X>();
  Y* yp = y.as<Y>();
  for_each_element([&](const auto& o) { yp[o[1]] = from_f64<Y>(to_f64(xp[o[0]])); }, x, y);
}

// A unary op whose function does not depend on the dtype.
template <double (*Fn)(double)>
polychip_status unary(const KernelCall& c) {
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    map_unary<decltype(s)>(c[0], c[1], Fn);
    return kOk;
  });
}

// dx = dy * Fn(x).
template <double (*Fn)(double)>
polychip_status unary_backward(const KernelCall& c) {
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    map_binary<decltype(s)>(c[0], c[1], c[2], [](double dy, double x) { return dy * Fn(x); });
    return kOk;
  });
}

template <double (*Fn)(double, double)>
polychip_status binary(const KernelCall& c) {
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    map_binary<decltype(s)>(c[0], c[1], c[2], Fn);
    return kOk;
  });
}

double add(double a, double b) { return a + b; }
double sub(double a, double b) { return a - b; }
double mul(double a, double b) { return a * b; }
double divide(double a, double b) { return a / b; }
double neg(double x) { return -x; }
double sqrt_fn(double x) { return std::sqrt(x); }
double rsqrt(double x) { return 1.0 / std::sqrt(x); }
double tanh_fn(double x) { return std::tanh(x); }
// relu_backward selects (dx = x > 0 ? dy : 0), as torch does: an Inf or NaN
// gradient where x <= 0 gives 0, not NaN.
double relu_select(double dy, double x) { return x > 0 ? dy : 0.0; }

// exp and log, with the sim.ftz defect when the device's numerics ask.
template <double (*Fn)(double)>
polychip_status exp_or_log(const KernelCall& c) {
  const bool ftz = c.numerics->ftz_fast_exp_log;
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    if (!ftz) {
      map_unary<S>(c[0], c[1], Fn);
    } else {
      map_unary<S>(c[0], c[1], [](double x) {
        const double r = Fn(math::flush_subnormal(x, min_normal<S>()));
        return math::flush_subnormal(math::truncate_fraction(r, 12), min_normal<S>());
      });
    }
    return kOk;
  });
}
double exp_fn(double x) { return std::exp(x); }
double log_fn(double x) { return std::log(x); }

polychip_status gelu(const KernelCall& c) {
  const bool tanh_form = c.i(attr::kGeluApproximate) != 0;
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    map_unary<decltype(s)>(c[0], c[1], tanh_form ? math::gelu_tanh : math::gelu_erf);
    return kOk;
  });
}

polychip_status gelu_backward(const KernelCall& c) {
  const auto grad = c.i(attr::kGeluApproximate) != 0 ? math::gelu_tanh_grad : math::gelu_erf_grad;
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    map_binary<decltype(s)>(c[0], c[1], c[2], [grad](double dy, double x) { return dy * grad(x); });
    return kOk;
  });
}

polychip_status copy(const KernelCall& c) {
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    const S* xp = c[0].as<S>();
    S* yp = c[1].as<S>();
    for_each_element([&](const auto& o) { yp[o[1]] = xp[o[0]]; }, c[0], c[1]);
    return kOk;
  });
}

polychip_status fill(const KernelCall& c) {
  const double value = c.f(attr::kFillValue);
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    const S v = from_f64<S>(value);
    S* p = c[0].as<S>();
    for_each_element([&](const auto& o) { p[o[0]] = v; }, c[0]);
    return kOk;
  });
}

bool is_main_float(DType d) {
  return d == DType::kF64 || d == DType::kF32 || d == DType::kF16 || d == DType::kBF16;
}

// cast: one rounding from the exact source value; f8 formats go through
// the HAL's bit-exact conversions.
polychip_status cast(const KernelCall& c) {
  const TensorView &x = c[0], &y = c[1];
  if (is_main_float(x.dtype) && is_main_float(y.dtype)) {
    return visit_float(x.dtype, c.op, [&](auto xs) {
      return visit_float(y.dtype, c.op, [&](auto ys) {
        using X = decltype(xs);
        using Y = decltype(ys);
        map_unary_cast<X, Y>(x, y);
        return kOk;
      });
    });
  }
  for (DType d : {x.dtype, y.dtype})
    if (!is_floating(d))
      return kernel_error(POLYCHIP_UNSUPPORTED,
                          "cast: dtype " + std::string(dtype_name(d)) + " is not a float");
  const size_t xs = dtype_size(x.dtype), ys = dtype_size(y.dtype);
  for_each_element(
      [&](const auto& o) {
        store_from_f64(load_as_f64(x.data + o[0] * xs, x.dtype), y.data + o[1] * ys, y.dtype);
      },
      x, y);
  return kOk;
}

const NamedKernel kKernels[] = {
    {"add", binary<add>},
    {"sub", binary<sub>},
    {"mul", binary<mul>},
    {"div", binary<divide>},
    {"neg", unary<neg>},
    {"exp", exp_or_log<exp_fn>},
    {"log", exp_or_log<log_fn>},
    {"sqrt", unary<sqrt_fn>},
    {"rsqrt", unary<rsqrt>},
    {"tanh", unary<tanh_fn>},
    {"sigmoid", unary<math::sigmoid>},
    {"relu", unary<math::relu>},
    {"gelu", gelu},
    {"silu", unary<math::silu>},
    {"relu_backward", binary<relu_select>},
    {"gelu_backward", gelu_backward},
    {"silu_backward", unary_backward<math::silu_grad>},
    {"sigmoid_backward", unary_backward<math::sigmoid_grad>},
    {"tanh_backward", unary_backward<math::tanh_grad>},
    {"cast", cast},
    {"fill", fill},
    {"copy", copy},
};

}  // namespace

std::span<const NamedKernel> elementwise_kernels() { return kKernels; }

}  // namespace polychip::cpu
