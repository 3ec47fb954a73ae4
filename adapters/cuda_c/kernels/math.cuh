// Math in the accumulation type (float or double), one spelling for both.
#pragma once

#include "numeric.cuh"

PC_DEVICE float pc_exp(float x) { return expf(x); }
PC_DEVICE double pc_exp(double x) { return exp(x); }
PC_DEVICE float pc_log(float x) { return logf(x); }
PC_DEVICE double pc_log(double x) { return log(x); }
PC_DEVICE float pc_sqrt(float x) { return sqrtf(x); }
PC_DEVICE double pc_sqrt(double x) { return sqrt(x); }
PC_DEVICE float pc_tanh(float x) { return tanhf(x); }
PC_DEVICE double pc_tanh(double x) { return tanh(x); }
PC_DEVICE float pc_erfc(float x) { return erfcf(x); }
PC_DEVICE double pc_erfc(double x) { return erfc(x); }
PC_DEVICE bool pc_isinf(float x) { return isinf(x); }
PC_DEVICE bool pc_isinf(double x) { return isinf(x); }

template <typename A>
PC_DEVICE A pc_sigmoid(A x) {
  return A(1) / (A(1) + pc_exp(-x));
}

// sqrt(2/pi) and the cubic coefficient of the tanh form of gelu.
template <typename A>
PC_DEVICE A pc_gelu_k() {
  return A(0.7978845608028654);
}
template <typename A>
PC_DEVICE A pc_gelu_c() {
  return A(0.044715);
}

// The limit of an x * (0 at -Inf, 1 at +Inf) activation at x = +-Inf (the
// plain formula gives -Inf * 0 = NaN), and of its derivative.
template <typename A>
PC_DEVICE A pc_activation_limit(A x) {
  return x > A(0) ? x : A(-0.0);
}
template <typename A>
PC_DEVICE A pc_gradient_limit(A x) {
  return x > A(0) ? A(1) : A(0);
}

// erf form: x * Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2 (erfc keeps the
// relative accuracy for large negative x, where 1 + erf cancels).
// tanh form: 0.5 x (1 + tanh u) written as x * sigmoid(2u), for the same reason.
template <typename A>
PC_DEVICE A pc_gelu(A x, int approximate) {
  if (pc_isinf(x)) return pc_activation_limit(x);
  if (approximate) {
    const A u = pc_gelu_k<A>() * (x + pc_gelu_c<A>() * x * x * x);
    return x * pc_sigmoid(A(2) * u);
  }
  return A(0.5) * x * pc_erfc(x * A(-0.7071067811865476));
}

template <typename A>
PC_DEVICE A pc_gelu_derivative(A x, int approximate) {
  if (pc_isinf(x)) return pc_gradient_limit(x);
  if (approximate) {
    const A k = pc_gelu_k<A>(), c = pc_gelu_c<A>();
    const A u = k * (x + c * x * x * x);
    const A one_plus_t = A(2) * pc_sigmoid(A(2) * u);
    const A one_minus_t = A(2) * pc_sigmoid(A(-2) * u);
    return A(0.5) * one_plus_t +
           A(0.5) * x * one_minus_t * one_plus_t * k * (A(1) + A(3) * c * x * x);
  }
  const A cdf = A(0.5) * pc_erfc(x * A(-0.7071067811865476));
  const A pdf = pc_exp(A(-0.5) * x * x) * A(0.3989422804014327);
  return cdf + x * pdf;
}

template <typename A>
PC_DEVICE A pc_silu(A x) {
  return pc_isinf(x) ? pc_activation_limit(x) : x * pc_sigmoid(x);
}

// s (1 + x (1 - s)) with 1 - s = sigmoid(-x), exact where s rounds to 1.
template <typename A>
PC_DEVICE A pc_silu_derivative(A x) {
  if (pc_isinf(x)) return pc_gradient_limit(x);
  return pc_sigmoid(x) * (A(1) + x * pc_sigmoid(-x));
}
