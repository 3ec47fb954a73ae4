// layernorm and rmsnorm launchers (forward and backward).
#include "ops.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::opencl {

void run_layernorm(const KernelCall& call) {
  const auto& x = call.t(0);
  int64_t n = x.shape[0], d = x.shape[1];
  ContiguousOperands ops(call);
  AccScalar eps(x.dtype, call.f(attr::kEps));
  Launch(call.device, "norm", x.dtype, "pc_layernorm_kernel")
      .arg(n)
      .arg(d)
      .arg(eps)
      .buffer(ops.get(0))
      .buffer(ops.get(1))
      .buffer(ops.get(2))
      .buffer(ops.get(3))
      .buffer(ops.get(4))
      .buffer(ops.get(5))
      .run1d(call.queue, static_cast<uint64_t>(n));
  ops.finish();
}

void run_layernorm_backward(const KernelCall& call) {
  const auto& x = call.t(1);
  int64_t n = x.shape[0], d = x.shape[1];
  ContiguousOperands ops(call);
  Launch(call.device, "norm", x.dtype, "pc_layernorm_backward_dx_kernel")
      .arg(n)
      .arg(d)
      .buffer(ops.get(0))
      .buffer(ops.get(1))
      .buffer(ops.get(2))
      .buffer(ops.get(3))
      .buffer(ops.get(4))
      .buffer(ops.get(5))
      .run1d(call.queue, static_cast<uint64_t>(n));
  Launch(call.device, "norm", x.dtype, "pc_layernorm_backward_params_kernel")
      .arg(n)
      .arg(d)
      .buffer(ops.get(0))
      .buffer(ops.get(1))
      .buffer(ops.get(3))
      .buffer(ops.get(4))
      .buffer(ops.get(6))
      .buffer(ops.get(7))
      .run1d(call.queue, static_cast<uint64_t>(d));
  ops.finish();
}

void run_rmsnorm(const KernelCall& call) {
  const auto& x = call.t(0);
  int64_t n = x.shape[0], d = x.shape[1];
  ContiguousOperands ops(call);
  AccScalar eps(x.dtype, call.f(attr::kEps));
  Launch(call.device, "norm", x.dtype, "pc_rmsnorm_kernel")
      .arg(n)
      .arg(d)
      .arg(eps)
      .buffer(ops.get(0))
      .buffer(ops.get(1))
      .buffer(ops.get(2))
      .buffer(ops.get(3))
      .run1d(call.queue, static_cast<uint64_t>(n));
  ops.finish();
}

void run_rmsnorm_backward(const KernelCall& call) {
  const auto& x = call.t(1);
  int64_t n = x.shape[0], d = x.shape[1];
  ContiguousOperands ops(call);
  Launch(call.device, "norm", x.dtype, "pc_rmsnorm_backward_dx_kernel")
      .arg(n)
      .arg(d)
      .buffer(ops.get(0))
      .buffer(ops.get(1))
      .buffer(ops.get(2))
      .buffer(ops.get(3))
      .buffer(ops.get(4))
      .run1d(call.queue, static_cast<uint64_t>(n));
  Launch(call.device, "norm", x.dtype, "pc_rmsnorm_backward_dgamma_kernel")
      .arg(n)
      .arg(d)
      .buffer(ops.get(0))
      .buffer(ops.get(1))
      .buffer(ops.get(3))
      .buffer(ops.get(5))
      .run1d(call.queue, static_cast<uint64_t>(d));
  ops.finish();
}

}  // namespace polychip::opencl
