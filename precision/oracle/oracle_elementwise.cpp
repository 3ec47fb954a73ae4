// Oracle elementwise ops in long double, using forms without cancellation
// (erfc for gelu's 1 + erf, sigmoid products for 1 - s, sech^2 for
// 1 - tanh^2). At +-Inf the oracle returns the mathematical limit (e.g.
// silu(-Inf) = -0, gelu'(+Inf) = 1) even where evaluating the textbook
// formula in IEEE arithmetic gives NaN; docs/reference-numerics.md lists them.
#include <cmath>
#include <numbers>
#include <string_view>

#include "precision/oracle/oracle_ops.hpp"

namespace polychip::precision::oracle_detail {
namespace {

using LD = long double;
constexpr LD kSqrt1_2 = 0.707106781186547524400844362104849039L;
constexpr LD kInvSqrt2Pi = 0.398942280401432677939946059934381868L;  // 1/sqrt(2 pi)
constexpr LD kSqrt2OverPi = 0.797884560802865355879892119868763737L;
constexpr LD kGeluKappa = 0.044715L;

LD sigmoid(LD x) {
  if (x >= 0) return 1 / (1 + std::exp(-x));
  LD e = std::exp(x);
  return e / (1 + e);
}

LD gelu_erf(LD x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0L;
  return x / 2 * std::erfc(-x * kSqrt1_2);
}
LD gelu_tanh_inner(LD x) { return kSqrt2OverPi * (x + kGeluKappa * x * x * x); }
// 0.5 x (1 + tanh u) = x sigmoid(2u).
LD gelu_tanh(LD x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0L;
  return x * sigmoid(2 * gelu_tanh_inner(x));
}
LD silu(LD x) {
  if (std::isinf(x)) return x > 0 ? x : -0.0L;
  return x * sigmoid(x);
}

// Derivatives; at +-Inf their limits are 1 and 0.
LD gelu_erf_grad(LD x) {
  if (std::isinf(x)) return x > 0 ? 1 : 0;
  return std::erfc(-x * kSqrt1_2) / 2 + x * kInvSqrt2Pi * std::exp(-x * x / 2);
}
LD gelu_tanh_grad(LD x) {
  if (std::isinf(x)) return x > 0 ? 1 : 0;
  LD u = gelu_tanh_inner(x);
  LD s = sigmoid(2 * u), sn = sigmoid(-2 * u);  // 1 + tanh u = 2s, 1 - tanh^2 u = 4 s sn
  LD du = kSqrt2OverPi * (1 + 3 * kGeluKappa * x * x);
  return s + 2 * x * s * sn * du;
}
LD silu_grad(LD x) {
  if (std::isinf(x)) return x > 0 ? 1 : 0;
  LD s = sigmoid(x);
  return s + x * s * sigmoid(-x);
}
LD sigmoid_grad(LD x) { return sigmoid(x) * sigmoid(-x); }
LD tanh_grad(LD x) {
  LD ch = std::cosh(x);
  return 1 / (ch * ch);
}

template <typename F>
void map1(const Call& c, F f) {
  const auto& x = c.in[0].values;
  auto& y = c.out[0].values;
  for (size_t k = 0; k < x.size(); ++k) y[k] = static_cast<double>(f(static_cast<LD>(x[k])));
}

}  // namespace

void binary(const Call& c) {
  std::string_view name = c.op.name;
  const auto &a = c.in[0].values, &b = c.in[1].values;
  auto& out = c.out[0].values;
  // One IEEE double operation is the correctly rounded float64 result.
  for (size_t k = 0; k < a.size(); ++k) {
    if (name == "add")
      out[k] = a[k] + b[k];
    else if (name == "sub")
      out[k] = a[k] - b[k];
    else if (name == "mul")
      out[k] = a[k] * b[k];
    else
      out[k] = a[k] / b[k];
  }
}

void unary(const Call& c) {
  std::string_view name = c.op.name;
  bool tanh_form = c.i(attr::kGeluApproximate) != 0;
  if (name == "neg") return map1(c, [](LD x) { return -x; });
  if (name == "exp") return map1(c, [](LD x) { return std::exp(x); });
  if (name == "log") return map1(c, [](LD x) { return std::log(x); });
  // IEEE double sqrt is correctly rounded; a long double sqrt rounded to
  // double is not always (double rounding), which matters for f64 outputs.
  if (name == "sqrt") return map1(c, [](LD x) { return LD{std::sqrt(static_cast<double>(x))}; });
  if (name == "rsqrt") return map1(c, [](LD x) { return 1 / std::sqrt(x); });
  if (name == "tanh") return map1(c, [](LD x) { return std::tanh(x); });
  if (name == "sigmoid") return map1(c, sigmoid);
  if (name == "relu") return map1(c, [](LD x) { return std::isnan(x) ? x : (x > 0 ? x : 0); });
  if (name == "gelu") return tanh_form ? map1(c, gelu_tanh) : map1(c, gelu_erf);
  if (name == "silu") return map1(c, silu);
  throw_error(StatusCode::kInternal, fmt::format("oracle: no unary kernel for '{}'", name));
}

void unary_backward(const Call& c) {
  std::string_view name = c.op.name;
  bool tanh_form = c.i(attr::kGeluApproximate) != 0;
  LD (*grad)(LD) = nullptr;
  if (name == "gelu_backward")
    grad = tanh_form ? gelu_tanh_grad : gelu_erf_grad;
  else if (name == "silu_backward")
    grad = silu_grad;
  else if (name == "sigmoid_backward")
    grad = sigmoid_grad;
  else if (name == "tanh_backward")
    grad = tanh_grad;
  const auto &dy = c.in[0].values, &x = c.in[1].values;
  auto& dx = c.out[0].values;
  for (size_t k = 0; k < x.size(); ++k) {
    if (name == "relu_backward")  // a select, as the contract's (x > 0) mask
      dx[k] = x[k] > 0 ? dy[k] : 0.0;
    else
      dx[k] = static_cast<double>(static_cast<LD>(dy[k]) * grad(static_cast<LD>(x[k])));
  }
}

// cast and copy: the exact value is the input itself (the harness rounds
// nothing; the device's cast is judged by its error in the target dtype).
// fill: the attribute value.
void cast_fill_copy(const Call& c) {
  auto& y = c.out[0].values;
  if (std::string_view(c.op.name) == "fill") {
    for (auto& v : y) v = c.f(attr::kFillValue);
    return;
  }
  y = c.in[0].values;
}

}  // namespace polychip::precision::oracle_detail
