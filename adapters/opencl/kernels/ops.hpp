// The kernel launchers, one per op family. Each takes a validated call (the
// HAL's dispatcher checked it against the op contract) and enqueues its
// kernels on the call's queue; errors throw Failure.
#pragma once

#include "launch.hpp"

namespace polychip::opencl {

void run_unary(const KernelCall& call);
void run_unary_backward(const KernelCall& call);
void run_binary(const KernelCall& call);
void run_fill(const KernelCall& call);
void run_copy(const KernelCall& call);
void run_cast(const KernelCall& call);
void run_adamw(const KernelCall& call);
void run_rotary(const KernelCall& call);
void run_reduction(const KernelCall& call);
void run_argmax(const KernelCall& call);
void run_softmax(const KernelCall& call);
void run_softmax_backward(const KernelCall& call);
void run_gemm(const KernelCall& call);
void run_layernorm(const KernelCall& call);
void run_layernorm_backward(const KernelCall& call);
void run_rmsnorm(const KernelCall& call);
void run_rmsnorm_backward(const KernelCall& call);
void run_cross_entropy(const KernelCall& call);
void run_cross_entropy_backward(const KernelCall& call);
void run_embedding(const KernelCall& call);
void run_embedding_backward(const KernelCall& call);
void run_attention(const KernelCall& call);
void run_attention_backward(const KernelCall& call);

// Which GEMM kernel runs, from the environment variable POLYCHIP_OPENCL_GEMM
// (read on every call, so a benchmark compares them in one process):
// "tiled" (default: 64x64 local-memory tiles, 8x8 outputs per work-item)
// or "naive" (one full dot product per work-item, kept for comparison);
// any other value fails the call (INVALID_ARGUMENT, naming the variable).
enum class GemmKernel { kTiled, kNaive };
GemmKernel gemm_kernel_from_environment();

}  // namespace polychip::opencl
