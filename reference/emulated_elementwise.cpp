// Emulated elementwise kernels: PyTorch's CUDA formulas (aten/src/ATen/
// native/cuda: UnaryOpsKernel, ActivationGeluKernel, ActivationSiluKernel,
// ...), evaluated in the op-math type (float for f32/f16/bf16, double for
// f64) with CUDA's math functions (cuda_math.hpp), rounded once to the
// output dtype. Expressions are evaluated as written: nvcc's FMA contraction
// of elementwise formulas is not modelled (it changes results by at most an
// ulp of an intermediate).
#include <cmath>
#include <numbers>
#include <string_view>

#include "reference/cuda_math.hpp"
#include "reference/emulation_ops.hpp"

namespace polychip::reference::emulation {
namespace {

// <cmath>'s M_SQRT2, M_SQRT1_2, M_2_SQRTPI, which PyTorch's kernels use.
constexpr double kSqrt2 = std::numbers::sqrt2;
constexpr double kSqrt1_2 = std::numbers::sqrt2 / 2;
constexpr double k2SqrtPi = 2 * std::numbers::inv_sqrtpi;

template <typename A>
A sigmoid(A x) {
  return A(1) / (A(1) + cuda_exp(-x));
}

// gelu, erf form: x * 0.5 * (1 + erf(x * M_SQRT1_2)).
template <typename A>
A gelu_erf(A x) {
  const A k_alpha = static_cast<A>(kSqrt1_2);
  return x * A(0.5) * (A(1) + cuda_erf(x * k_alpha));
}
// gelu, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <typename A>
A gelu_tanh(A x) {
  const A k_beta = static_cast<A>(kSqrt2 * k2SqrtPi * 0.5);
  const A k_kappa = static_cast<A>(0.044715);
  A x_cube = x * x * x;
  A inner = k_beta * (x + k_kappa * x_cube);
  return A(0.5) * x * (A(1) + cuda_tanh(inner));
}
template <typename A>
A gelu_erf_grad(A x) {
  const A k_beta = static_cast<A>(k2SqrtPi * kSqrt1_2 * 0.5);
  const A k_alpha = static_cast<A>(kSqrt1_2);
  A cdf = A(0.5) * (A(1) + cuda_erf(x * k_alpha));
  A pdf = cuda_exp(A(-0.5) * x * x) * k_beta;
  return cdf + x * pdf;
}
template <typename A>
A gelu_tanh_grad(A x) {
  const A k_beta = static_cast<A>(kSqrt2 * k2SqrtPi * 0.5);
  const A k_kappa = static_cast<A>(0.044715);
  A x_sq = x * x;
  A x_cube = x_sq * x;
  A inner = k_beta * (x + k_kappa * x_cube);
  A tanh_inner = cuda_tanh(inner);
  A left = A(0.5) * x;
  A right = A(1) + tanh_inner;
  A left_derivative = A(0.5) * right;
  A right_derivative = left * (A(1) - tanh_inner * tanh_inner);
  A inner_derivative = k_beta * (A(1) + A(3) * k_kappa * x_sq);
  return left_derivative + right_derivative * inner_derivative;
}

template <typename A>
A unary_value(std::string_view op, bool tanh_form, A x) {
  if (op == "neg") return -x;
  if (op == "exp") return cuda_exp(x);
  if (op == "log") return cuda_log(x);
  if (op == "sqrt") return cuda_sqrt(x);
  if (op == "rsqrt") return cuda_rsqrt(x);
  if (op == "tanh") return cuda_tanh(x);
  if (op == "sigmoid") return sigmoid(x);
  if (op == "relu") return std::isnan(x) ? x : (x > 0 ? x : A(0));  // clamp_min(0)
  if (op == "gelu") return tanh_form ? gelu_tanh(x) : gelu_erf(x);
  if (op == "silu") return x / (A(1) + cuda_exp(-x));
  throw_error(StatusCode::kInternal, fmt::format("emulation: no unary kernel for '{}'", op));
}

template <typename A>
A backward_value(std::string_view op, bool tanh_form, A dy, A x) {
  if (op == "relu_backward") return x <= 0 ? A(0) : dy;  // threshold_backward
  if (op == "gelu_backward") return dy * (tanh_form ? gelu_tanh_grad(x) : gelu_erf_grad(x));
  if (op == "silu_backward") {
    A s = sigmoid(x);
    return dy * s * (A(1) + x * (A(1) - s));
  }
  if (op == "sigmoid_backward") {
    A s = sigmoid(x);
    return dy * s * (A(1) - s);
  }
  if (op == "tanh_backward") {
    A t = cuda_tanh(x);
    return dy * (A(1) - t * t);
  }
  throw_error(StatusCode::kInternal, fmt::format("emulation: no backward kernel for '{}'", op));
}

template <typename A>
A binary_value(std::string_view op, A a, A b) {
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  return a / b;  // -prec-div=true: IEEE division
}

template <typename A>
void elementwise_as(const Call& c) {
  std::string_view op = c.op.name;
  const bool tanh_form = c.i(attr::kGeluApproximate) != 0;
  HostTensor& y = c.out[0];
  const size_t n = y.values.size();
  for (size_t k = 0; k < n; ++k) {
    A r;
    if (c.op.tensors.size() == 2)
      r = unary_value(op, tanh_form, static_cast<A>(c.in[0].values[k]));
    else if (std::string_view(c.op.tensors[0].name) == "dy")
      r = backward_value(op, tanh_form, static_cast<A>(c.in[0].values[k]),
                         static_cast<A>(c.in[1].values[k]));
    else
      r = binary_value(op, static_cast<A>(c.in[0].values[k]), static_cast<A>(c.in[1].values[k]));
    y.values[k] = to_output(y.dtype, r);
  }
}

// cast: c10's conversions go through float for 16- and 8-bit targets, so an
// f64 source is rounded twice (to f32, then to the target). fill: the value
// converted the same way. copy: bit-exact.
void cast_fill_copy(const Call& c) {
  std::string_view op = c.op.name;
  HostTensor& y = c.out[0];
  auto convert = [&](double v) {
    if (y.dtype == DType::kF64) return v;
    return round_to(y.dtype, static_cast<double>(static_cast<float>(v)));
  };
  if (op == "fill") {
    for (auto& v : y.values) v = convert(c.f(attr::kFillValue));
  } else if (op == "copy") {
    y.values = c.in[0].values;
  } else {
    for (size_t k = 0; k < y.values.size(); ++k) y.values[k] = convert(c.in[0].values[k]);
  }
}

}  // namespace

void elementwise(const Call& c) {
  std::string_view op = c.op.name;
  if (op == "cast" || op == "fill" || op == "copy") return cast_fill_copy(c);
  if (c.compute_dtype() == DType::kF64)
    elementwise_as<double>(c);
  else
    elementwise_as<float>(c);
}

}  // namespace polychip::reference::emulation
