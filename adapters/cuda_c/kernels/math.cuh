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
PC_DEVICE float pc_erf(float x) { return erff(x); }
PC_DEVICE double pc_erf(double x) { return erf(x); }

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

template <typename A>
PC_DEVICE A pc_gelu(A x, int approximate) {
  if (approximate) {
    const A u = pc_gelu_k<A>() * (x + pc_gelu_c<A>() * x * x * x);
    return A(0.5) * x * (A(1) + pc_tanh(u));
  }
  return A(0.5) * x * (A(1) + pc_erf(x * A(0.7071067811865476)));
}

template <typename A>
PC_DEVICE A pc_gelu_derivative(A x, int approximate) {
  if (approximate) {
    const A k = pc_gelu_k<A>(), c = pc_gelu_c<A>();
    const A t = pc_tanh(k * (x + c * x * x * x));
    return A(0.5) * (A(1) + t) + A(0.5) * x * (A(1) - t * t) * k * (A(1) + A(3) * c * x * x);
  }
  const A cdf = A(0.5) * (A(1) + pc_erf(x * A(0.7071067811865476)));
  const A pdf = pc_exp(A(-0.5) * x * x) * A(0.3989422804014327);
  return cdf + x * pdf;
}
