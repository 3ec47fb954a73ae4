#include "elementwise_error_scale.hpp"

#include <cmath>

#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"
#include "problem.hpp"
#include "value_generator.hpp"

namespace polychip::precision {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;  // gelu's tanh form: u = c (x + k x^3)
constexpr double kGeluCubic = 0.044715;

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double normal_density(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI); }

// What the op computes in: f64 for f64, f32 for the rest (PyTorch's opmath).
double compute_min_normal(DType dtype) {
  return float_format(dtype == DType::kF64 ? DType::kF64 : DType::kF32).min_normal();
}

// The magnitude of the terms gelu'(x) adds up.
double gelu_derivative_terms(bool tanh_form, double x) {
  if (!tanh_form) {
    // Phi(x) + x phi(x), Phi = (1 + erf(x / sqrt 2)) / 2: 1 + erf cancels
    // for negative x.
    return 1 + std::fabs(x) * normal_density(x);
  }
  // (1 + t) / 2 + x (1 - t^2) u' / 2, t = tanh(u): 1 - t^2 cancels as t
  // saturates.
  const double t = std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
  const double du = kSqrt2OverPi * (1 + 3 * kGeluCubic * x * x);
  return 1 + 0.5 * std::fabs(x) * (1 + t * t) * du;
}

}  // namespace

bool has_elementwise_error_scale(std::string_view op) {
  return op == "sigmoid" || op == "gelu" || op == "silu" || op == "gelu_backward" ||
         op == "silu_backward" || op == "sigmoid_backward" || op == "tanh_backward";
}

ElementErrorScale activation_error_scale(std::string_view op, DType dtype, double x) {
  ElementErrorScale s;
  if (!std::isfinite(x)) return s;  // the result must be the limit
  // sigmoid: 1 / (1 + e^-x) adds nothing up; gelu and silu: x times a
  // factor in [0, 1] that cancels (1 + erf, 1 + tanh) in some forms.
  // The factor underflows to 0 for very negative x (e^-x overflows, 1 + erf
  // rounds to 0): sigmoid loses up to the smallest normal, gelu and silu x
  // times it.
  const bool sigmoid_op = op == "sigmoid";
  s.terms = sigmoid_op ? 0 : std::fabs(x);
  s.underflow = compute_min_normal(dtype) * (sigmoid_op ? 1 : std::fabs(x));
  return s;
}

ElementErrorScale gradient_error_scale(std::string_view op, bool tanh_form, DType dtype, double dy,
                                       double x) {
  ElementErrorScale s;
  if (!std::isfinite(x) || !std::isfinite(dy)) return s;
  const double g = std::fabs(dy);
  if (op == "gelu_backward") {
    s.terms = g * gelu_derivative_terms(tanh_form, x);
  } else if (op == "silu_backward") {  // s (1 + x (1 - s)): 1 + x (1 - s) crosses 0 near -1.28
    s.terms = g * sigmoid(x) * (1 + std::fabs(x));
  } else if (op == "sigmoid_backward") {  // s (1 - s) = s - s^2: 1 - s saturates
    const double sx = sigmoid(x);
    s.terms = g * (sx + sx * sx);
  } else if (op == "tanh_backward") {  // 1 - t^2: saturates
    const double t = std::tanh(x);
    s.terms = g * (1 + t * t);
  } else {
    throw_error(StatusCode::kInternal, "gradient_error_scale: not an activation gradient");
  }
  s.underflow = compute_min_normal(dtype) * g * (1 + std::fabs(x));
  return s;
}

std::vector<ElementErrorScale> elementwise_error_scales(const Problem& p) {
  std::vector<ElementErrorScale> out;
  const std::string& op = p.spec.op;
  if (!has_elementwise_error_scale(op)) return out;
  const bool tanh_form =
      (op == "gelu" || op == "gelu_backward") && p.attrs.ints[attr::kGeluApproximate] != 0;
  const DType dtype = p.outputs[0].dtype;
  const bool gradient = p.inputs.size() == 2;  // (dy, x)
  const std::vector<double>& x = p.inputs[gradient ? 1 : 0].values;
  out.reserve(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out.push_back(gradient ? gradient_error_scale(op, tanh_form, dtype, p.inputs[0].values[i], x[i])
                           : activation_error_scale(op, dtype, x[i]));
  return out;
}

double elementwise_atol(const Tolerance& tol, DType dtype, const ElementErrorScale& s) {
  return tol.atol + tol.atol_factor * s.terms + s.underflow + float_format(dtype).min_subnormal();
}

}  // namespace polychip::precision
