// Which implementation runs each op of the contract, and the adapter
// kernel-table entries (op + dtype signature) generated from the contract,
// so the table never drifts from it.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "kernel_call.hpp"

namespace polychip::cpu {

struct NamedKernel {
  const char* op;
  KernelImpl impl;
};

// One list per family (each defined beside its kernels).
std::span<const NamedKernel> elementwise_kernels();
std::span<const NamedKernel> reduction_kernels();
std::span<const NamedKernel> gemm_kernels();
std::span<const NamedKernel> softmax_kernels();
std::span<const NamedKernel> norm_kernels();
std::span<const NamedKernel> loss_kernels();
std::span<const NamedKernel> embedding_kernels();
std::span<const NamedKernel> rotary_kernels();
std::span<const NamedKernel> attention_kernels();
std::span<const NamedKernel> optimizer_kernels();

// nullptr when no kernel implements `op`.
KernelImpl find_kernel_impl(std::string_view op);

// Runs `call` (views already built) with `call.op`'s implementation;
// catches every exception so nothing crosses the C ABI.
polychip_status run_kernel(const KernelCall& call);

// Every legal (op, dtype signature) of the op contract that has an
// implementation, each pointing at `fn` (an adapter's generic entry that
// builds views and calls run_kernel).
std::vector<polychip_kernel_entry> contract_kernel_entries(polychip_kernel_fn fn);

}  // namespace polychip::cpu
