// The scalar functions of the elementwise ops, in double. Forms are chosen
// to avoid cancellation (erfc instead of 1 + erf for negative x,
// 1 + tanh(u) = 2 sigmoid(2u)), so f32 results are correctly rounded in
// practice. At x = +-Inf the x * (something -> 0) activations return their
// limits (gelu/silu(-Inf) = -0, gradients 0 or 1) instead of Inf * 0 = NaN.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace polychip::cpu::math {

inline constexpr double kSqrtHalf = 0.70710678118654752440;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;
inline constexpr double kSqrt2OverPi = 0.79788456080286535588;
inline constexpr double kGeluTanhC = 0.044715;

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

inline double relu(double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }

// The limit of an x * (0 at -Inf, 1 at +Inf) activation at x = +-Inf.
inline double activation_limit(double x) { return x > 0 ? x : -0.0; }
inline double gradient_limit(double x) { return x > 0 ? 1.0 : 0.0; }

inline double gelu_erf(double x) {
  if (std::isinf(x)) return activation_limit(x);
  return 0.5 * x * std::erfc(-x * kSqrtHalf);
}
inline double gelu_tanh(double x) {
  if (std::isinf(x)) return activation_limit(x);
  const double u = kSqrt2OverPi * (x + kGeluTanhC * x * x * x);
  return x * sigmoid(2.0 * u);  // 0.5 x (1 + tanh u)
}
inline double gelu_erf_grad(double x) {
  if (std::isinf(x)) return gradient_limit(x);
  return 0.5 * std::erfc(-x * kSqrtHalf) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
}
inline double gelu_tanh_grad(double x) {
  // Past |x| = 1e100 (f64 inputs only) x^3 overflows and 0 * Inf would give
  // NaN; the sigmoid saturated long before, so the limit is exact there.
  if (!(std::fabs(x) < 1e100)) return std::isnan(x) ? x : gradient_limit(x);
  const double u = kSqrt2OverPi * (x + kGeluTanhC * x * x * x);
  const double one_plus_t = 2.0 * sigmoid(2.0 * u);
  const double one_minus_t = 2.0 * sigmoid(-2.0 * u);
  return 0.5 * one_plus_t +
         0.5 * x * one_minus_t * one_plus_t * kSqrt2OverPi * (1.0 + 3.0 * kGeluTanhC * x * x);
}
inline double silu(double x) { return std::isinf(x) ? activation_limit(x) : x * sigmoid(x); }
inline double silu_grad(double x) {
  if (std::isinf(x)) return gradient_limit(x);
  const double s = sigmoid(x);
  return s * (1.0 + x * sigmoid(-x));
}
inline double sigmoid_grad(double x) { return sigmoid(x) * sigmoid(-x); }
inline double tanh_grad(double x) {
  const double t = std::tanh(x);
  return 1.0 - t * t;
}

// Keeps `bits` fraction bits of v, truncating the rest (finite v only).
inline double truncate_fraction(double v, int bits) {
  if (!std::isfinite(v) || v == 0) return v;
  uint64_t b = std::bit_cast<uint64_t>(v);
  b &= ~((uint64_t{1} << (52 - bits)) - 1);
  return std::bit_cast<double>(b);
}

// Zero (with v's sign) when |v| is below `min_normal`.
inline double flush_subnormal(double v, double min_normal) {
  return std::fabs(v) < min_normal ? std::copysign(0.0, v) : v;
}

}  // namespace polychip::cpu::math
