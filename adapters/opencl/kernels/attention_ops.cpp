// Attention launchers (forward, backward).
#include <fmt/format.h>

#include "ops.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::opencl {
namespace {

// Must match PC_MAX_D in opencl_c/attention.cl.
constexpr int64_t kMaxHeadDim = 256;

// The shape of q [B, H, S, D] as the kernels take it: one work-item per
// query (or key) row.
struct AttentionShape {
  int64_t rows, s, d;
};

AttentionShape attention_shape(const KernelCall& call, const polychip_tensor& q) {
  AttentionShape shape{q.shape[0] * q.shape[1] * q.shape[2], q.shape[2], q.shape[3]};
  if (shape.d > kMaxHeadDim)
    fail(POLYCHIP_UNSUPPORTED,
         fmt::format("{}: head dimension D = {} exceeds the opencl kernel's limit of {}", call.op,
                     shape.d, kMaxHeadDim));
  return shape;
}

// Every attention kernel takes rows, S, D, scale and causal, then the
// buffers of its tensors `slots`.
void launch_attention(const KernelCall& call, ContiguousOperands& ops, polychip_dtype dtype,
                      const AttentionShape& shape, const char* kernel,
                      std::initializer_list<int> slots) {
  Launch(call.device, "attention", dtype, kernel)
      .arg(shape.rows)
      .arg(shape.s)
      .arg(shape.d)
      .arg(AccScalar(dtype, call.f(attr::kScale)))
      .arg(static_cast<int32_t>(call.i(attr::kCausal) != 0))
      .buffers(ops, slots)
      .run1d(call.queue, static_cast<uint64_t>(shape.rows));
}

}  // namespace

void run_attention(const KernelCall& call) {
  const auto& q = call.t(0);
  AttentionShape shape = attention_shape(call, q);
  ContiguousOperands ops(call);
  launch_attention(call, ops, q.dtype, shape, "pc_attention_kernel", {0, 1, 2, 3, 4});
  ops.finish();
}

void run_attention_backward(const KernelCall& call) {
  const auto& q = call.t(1);
  AttentionShape shape = attention_shape(call, q);
  ContiguousOperands ops(call);
  launch_attention(call, ops, q.dtype, shape, "pc_attention_backward_dq_kernel",
                   {0, 1, 2, 3, 4, 5, 6});
  launch_attention(call, ops, q.dtype, shape, "pc_attention_backward_dkdv_kernel",
                   {0, 1, 2, 3, 4, 5, 7, 8});
  ops.finish();
}

}  // namespace polychip::opencl
