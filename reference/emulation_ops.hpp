// Internal: the NVIDIA emulation's per-family kernels and helpers.
#pragma once

#include <cstdint>
#include <span>

#include "precision/axis_split.hpp"
#include "precision/host_call.hpp"
#include "precision/host_tensor.hpp"
#include "reference/float_formats.hpp"

namespace polychip::reference::emulation {

using precision::AxisSplit;
using precision::HostTensor;
using precision::split_axis;

struct Call : precision::HostCall {
  // The compute dtype T (the first tensor with role kT).
  DType compute_dtype() const;
};

// An accumulator value stored into an output of `dtype`: rounded once.
template <typename Acc>
double to_output(DType dtype, Acc v) {
  if (dtype == DType::kF64) return static_cast<double>(v);
  return round_float_to(dtype, static_cast<float>(v));
}
// A value rounded to T the way a kernel converts an intermediate to the
// input dtype before a tensor-core product (f16/bf16 only; f32/f64 kept).
template <typename Acc>
Acc to_operand(DType t, Acc v) {
  if (t == DType::kF16 || t == DType::kBF16)
    return static_cast<Acc>(round_float_to(t, static_cast<float>(v)));
  return v;
}

void gemm(const Call& c);
void elementwise(const Call& c);
void reduction(const Call& c);
void softmax(const Call& c);
void softmax_backward(const Call& c);
void layernorm(const Call& c);
void layernorm_backward(const Call& c);
void rmsnorm(const Call& c);
void rmsnorm_backward(const Call& c);
void cross_entropy(const Call& c);
void cross_entropy_backward(const Call& c);
void embedding(const Call& c);
void embedding_backward(const Call& c);
void rotary_embedding(const Call& c);
void attention(const Call& c);
void attention_backward(const Call& c);
void adamw(const Call& c);

}  // namespace polychip::reference::emulation
