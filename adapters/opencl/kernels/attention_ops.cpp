// Attention launchers (forward, backward).
#include <fmt/format.h>

#include "ops.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::opencl {
namespace {

// Must match PC_MAX_D in opencl_c/attention.cl.
constexpr int64_t kMaxHeadDim = 256;

void check_head_dim(const KernelCall& call, int64_t d) {
  if (d > kMaxHeadDim)
    fail(POLYCHIP_UNSUPPORTED,
         fmt::format("{}: head dimension D = {} exceeds the opencl kernel's limit of {}", call.op,
                     d, kMaxHeadDim));
}

}  // namespace

void run_attention(const KernelCall& call) {
  const auto& q = call.t(0);
  int64_t rows = q.shape[0] * q.shape[1] * q.shape[2], s = q.shape[2], d = q.shape[3];
  check_head_dim(call, d);
  ContiguousOperands ops(call);
  Launch(call.device, "attention", q.dtype, "pc_attention_kernel")
      .arg(rows)
      .arg(s)
      .arg(d)
      .arg(AccScalar(q.dtype, call.f(attr::kScale)))
      .arg(static_cast<int32_t>(call.i(attr::kCausal) != 0))
      .buffer(ops.get(0))
      .buffer(ops.get(1))
      .buffer(ops.get(2))
      .buffer(ops.get(3))
      .buffer(ops.get(4))
      .run1d(call.queue, static_cast<uint64_t>(rows));
  ops.finish();
}

void run_attention_backward(const KernelCall& call) {
  const auto& q = call.t(1);
  int64_t rows = q.shape[0] * q.shape[1] * q.shape[2], s = q.shape[2], d = q.shape[3];
  check_head_dim(call, d);
  ContiguousOperands ops(call);
  AccScalar scale(q.dtype, call.f(attr::kScale));
  int32_t causal = call.i(attr::kCausal) != 0;
  Launch(call.device, "attention", q.dtype, "pc_attention_backward_dq_kernel")
      .arg(rows)
      .arg(s)
      .arg(d)
      .arg(scale)
      .arg(causal)
      .buffer(ops.get(0))
      .buffer(ops.get(1))
      .buffer(ops.get(2))
      .buffer(ops.get(3))
      .buffer(ops.get(4))
      .buffer(ops.get(5))
      .buffer(ops.get(6))
      .run1d(call.queue, static_cast<uint64_t>(rows));
  Launch(call.device, "attention", q.dtype, "pc_attention_backward_dkdv_kernel")
      .arg(rows)
      .arg(s)
      .arg(d)
      .arg(scale)
      .arg(causal)
      .buffer(ops.get(0))
      .buffer(ops.get(1))
      .buffer(ops.get(2))
      .buffer(ops.get(3))
      .buffer(ops.get(4))
      .buffer(ops.get(5))
      .buffer(ops.get(7))
      .buffer(ops.get(8))
      .run1d(call.queue, static_cast<uint64_t>(rows));
  ops.finish();
}

}  // namespace polychip::opencl
