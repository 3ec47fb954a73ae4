// layernorm and rmsnorm launchers (forward and backward). Every norm
// kernel takes the shape [n, d] of x, then its arguments.
#include "ops.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::opencl {
namespace {

// Forward: n, d, eps and the buffers of `slots`; one work-item per row.
void run_norm(const KernelCall& call, const char* kernel, std::initializer_list<int> slots) {
  const auto& x = call.t(0);
  int64_t n = x.shape[0], d = x.shape[1];
  ContiguousOperands ops(call);
  Launch(call.device, "norm", x.dtype, kernel)
      .arg(n)
      .arg(d)
      .arg(AccScalar(x.dtype, call.f(attr::kEps)))
      .buffers(ops, slots)
      .run1d(call.queue, static_cast<uint64_t>(n));
  ops.finish();
}

// Backward: dx with one work-item per row, then the parameter gradients
// with one per column (summing the rows in order: deterministic).
void run_norm_backward(const KernelCall& call, const char* dx_kernel,
                       std::initializer_list<int> dx_slots, const char* params_kernel,
                       std::initializer_list<int> params_slots) {
  const auto& x = call.t(1);
  int64_t n = x.shape[0], d = x.shape[1];
  ContiguousOperands ops(call);
  Launch(call.device, "norm", x.dtype, dx_kernel)
      .arg(n)
      .arg(d)
      .buffers(ops, dx_slots)
      .run1d(call.queue, static_cast<uint64_t>(n));
  Launch(call.device, "norm", x.dtype, params_kernel)
      .arg(n)
      .arg(d)
      .buffers(ops, params_slots)
      .run1d(call.queue, static_cast<uint64_t>(d));
  ops.finish();
}

}  // namespace

void run_layernorm(const KernelCall& call) {
  run_norm(call, "pc_layernorm_kernel", {0, 1, 2, 3, 4, 5});
}

void run_layernorm_backward(const KernelCall& call) {
  run_norm_backward(call, "pc_layernorm_backward_dx_kernel", {0, 1, 2, 3, 4, 5},
                    "pc_layernorm_backward_params_kernel", {0, 1, 3, 4, 6, 7});
}

void run_rmsnorm(const KernelCall& call) { run_norm(call, "pc_rmsnorm_kernel", {0, 1, 2, 3}); }

void run_rmsnorm_backward(const KernelCall& call) {
  run_norm_backward(call, "pc_rmsnorm_backward_dx_kernel", {0, 1, 2, 3, 4},
                    "pc_rmsnorm_backward_dgamma_kernel", {0, 1, 3, 5});
}

}  // namespace polychip::opencl
