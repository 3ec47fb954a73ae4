// The per-element absolute term of the activations and their gradients:
// a flushed subnormal fails, a rounding the formula's terms explain passes,
// and an intermediate that underflows the compute type as NVIDIA's does
// passes.
#include "elementwise_error_scale.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "metrics.hpp"

namespace polychip::precision {
namespace {

// Whether `device` passes against `exact` for one element of `op`, judged
// with the built-in tolerance and that element's scale.
bool activation_passes(const std::string& op, DType dt, double x, double device, double exact) {
  const Tolerance tol = ToleranceTable::builtin().lookup(op, dt);
  return element_error(device, exact, dt, tol,
                       elementwise_atol(tol, dt, activation_error_scale(op, dt, x)))
             .fraction <= 1;
}
bool gradient_passes(const std::string& op, DType dt, double dy, double x, double device,
                     double exact) {
  const Tolerance tol = ToleranceTable::builtin().lookup(op, dt);
  return element_error(device, exact, dt, tol,
                       elementwise_atol(tol, dt, gradient_error_scale(op, false, dt, dy, x)))
             .fraction <= 1;
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double gelu(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }

TEST(ElementwiseErrorScale, ASubnormalInputOrResultFlushedToZeroFails) {
  const double x = 3e-40;  // an f32 subnormal; gelu(x) = x / 2, silu(x) = x / 2
  EXPECT_FALSE(activation_passes("gelu", DType::kF32, x, 0.0, gelu(x)));
  EXPECT_FALSE(activation_passes("silu", DType::kF32, x, 0.0, x * sigmoid(x)));
  // Correctly rounded, it passes.
  const double rounded = static_cast<double>(static_cast<float>(gelu(x)));
  EXPECT_TRUE(activation_passes("gelu", DType::kF32, x, rounded, gelu(x)));
  // A subnormal gradient flushed: dx = dy * s (1 - s) = dy / 4 at x = 0.
  const double dy = 1e-39;
  for (const char* op : {"sigmoid_backward", "tanh_backward", "silu_backward", "gelu_backward"})
    EXPECT_FALSE(gradient_passes(op, DType::kF32, dy, 0.0, 0.0, 0.25 * dy)) << op;
  // bf16 shares f32's exponent range: its subnormals too.
  EXPECT_FALSE(activation_passes("gelu", DType::kBF16, 1e-39, 0.0, gelu(1e-39)));
}

TEST(ElementwiseErrorScale, ATinyNormalResultIsNotHiddenByAFloor) {
  // gelu(2e-10) = 1e-10: an absolute floor of 2.4e-7 let 0 pass.
  EXPECT_FALSE(activation_passes("gelu", DType::kF32, 2e-10, 0.0, gelu(2e-10)));
  // sigmoid(-20) = 2.1e-9: 0.5 (1 + tanh(x / 2)) returns 0 in f32.
  EXPECT_FALSE(activation_passes("sigmoid", DType::kF32, -20, 0.0, sigmoid(-20)));
}

TEST(ElementwiseErrorScale, AnUnderflowingIntermediateAsNvidiasPasses) {
  // 1 + erf(x / sqrt 2) rounds to 0 in f32 at x = -10: gelu = -0 where the
  // exact value is -7.6e-23.
  EXPECT_TRUE(activation_passes("gelu", DType::kF32, -10, -0.0, gelu(-10)));
  // e^-x overflows f32 at x = -89: sigmoid = 0 (exact 2.2e-39), silu = -0
  // (exact -2e-37, an f32 normal).
  EXPECT_TRUE(activation_passes("sigmoid", DType::kF32, -89, 0.0, sigmoid(-89)));
  EXPECT_TRUE(activation_passes("silu", DType::kF32, -89, -0.0, -89 * sigmoid(-89)));
  // ... and a gradient of the largest f32 through s(x) = 0 at x = -100.
  const double dy = 3e38, s = sigmoid(-100);
  EXPECT_TRUE(gradient_passes("sigmoid_backward", DType::kF32, dy, -100, 0.0, dy * s * (1 - s)));
  // In f64 the same kernel keeps those results: 0 fails there.
  EXPECT_FALSE(activation_passes("sigmoid", DType::kF64, -89, 0.0, sigmoid(-89)));
}

TEST(ElementwiseErrorScale, CancellingTermsScaleTheAbsoluteTerm) {
  // sigmoid_backward at x = 20: s rounds to 1 in f32, 1 - s to 0, while
  // the exact dx is 2e-9 dy.
  const double s = sigmoid(20);
  EXPECT_TRUE(gradient_passes("sigmoid_backward", DType::kF32, 1.0, 20, 0.0, s * (1 - s)));
  // ... but not for a gradient ten million times smaller than the terms.
  EXPECT_FALSE(gradient_passes("sigmoid_backward", DType::kF32, 1.0, 10, 0.0,
                               sigmoid(10) * (1 - sigmoid(10))));
  // gelu'(x) near its minimum cancels: Phi(x) + x phi(x) at x = -4.5 is
  // 2.6e-5 of terms near 1e-4; an f64 error of 3e-12 relative to dx is one
  // of the terms' roundings, where dy is the largest double.
  const double x = -4.5, dy = -1.7e308;
  const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
  const double dx = dy * (0.5 * std::erfc(-x / std::sqrt(2.0)) + x * phi);
  EXPECT_TRUE(gradient_passes("gelu_backward", DType::kF64, dy, x, dx * (1 + 3e-12), dx));
  EXPECT_FALSE(gradient_passes("gelu_backward", DType::kF64, dy, x, dx * (1 + 1e-6), dx));
}

TEST(ElementwiseErrorScale, NonFiniteInputsLeaveOnlyTheLimit) {
  const double inf = std::numeric_limits<double>::infinity();
  const ElementErrorScale a = activation_error_scale("gelu", DType::kF32, -inf);
  EXPECT_EQ(a.terms, 0);
  EXPECT_EQ(a.underflow, 0);
  const ElementErrorScale g = gradient_error_scale("silu_backward", false, DType::kF32, inf, 1.0);
  EXPECT_EQ(g.terms, 0);
  EXPECT_EQ(g.underflow, 0);
  EXPECT_TRUE(has_elementwise_error_scale("tanh_backward"));
  EXPECT_FALSE(has_elementwise_error_scale("exp"));  // ulp mode
}

}  // namespace
}  // namespace polychip::precision
