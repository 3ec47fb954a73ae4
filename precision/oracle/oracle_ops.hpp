// Internal: the oracle's per-family kernels and what they share.
#pragma once

#include <cstdint>
#include <span>

#include "precision/host_tensor.hpp"

namespace polychip::precision::oracle_detail {

struct Call {
  const OpSpec& op;
  std::span<const HostTensor> in;
  std::span<HostTensor> out;
  const polychip_op_attrs& attrs;
  int64_t i(int slot) const { return attrs.ints[slot]; }
  double f(int slot) const { return attrs.floats[slot]; }
};

// A tensor seen as [outer, length, inner] around one axis.
struct AxisSplit {
  int64_t outer = 1, length = 1, inner = 1;
  int64_t at(int64_t o, int64_t l, int64_t r) const { return (o * length + l) * inner + r; }
};
AxisSplit split_axis(const Shape& shape, int64_t axis_attr);

void gemm(const Call& c);
void binary(const Call& c);
void unary(const Call& c);
void unary_backward(const Call& c);
void cast_fill_copy(const Call& c);
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

}  // namespace polychip::precision::oracle_detail
