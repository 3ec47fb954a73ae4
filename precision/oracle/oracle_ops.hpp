// Internal: the oracle's per-family kernels and what they share.
#pragma once

#include <cstdint>
#include <span>

#include "precision/axis_split.hpp"
#include "precision/host_call.hpp"
#include "precision/host_tensor.hpp"

namespace polychip::precision::oracle_detail {

using Call = HostCall;

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
