// Reduction and softmax launchers.
#include <fmt/format.h>

#include "ops.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::opencl {
namespace {

int normalized_axis(const KernelCall& call, const polychip_tensor& x) {
  int64_t axis = call.i(attr::kAxis);
  return static_cast<int>(axis < 0 ? axis + x.rank : axis);
}

int reduce_code(const KernelCall& call) {
  if (call.op == "reduce_sum") return 0;
  if (call.op == "reduce_mean") return 1;
  if (call.op == "reduce_max") return 2;
  if (call.op == "l2_norm") return 3;
  fail(POLYCHIP_NOT_FOUND, fmt::format("no reduction opencl kernel for '{}'", call.op));
}

// Layout of x (tensor 0) and y (tensor 1) with x's shape: y has size 1
// along the axis, so its stride there is never used.
Layout reduction_layout(const KernelCall& call) {
  Layout l = make_layout(call, {0, 1});
  return l;
}

}  // namespace

void run_reduction(const KernelCall& call) {
  const auto& x = call.t(0);
  int axis = normalized_axis(call, x);
  Layout l = reduction_layout(call);
  int64_t num_out = numel(call.t(1));
  int code = reduce_code(call);
  Launch(call.device, "reduction", x.dtype, "pc_reduce_kernel")
      .arg(l)
      .arg(static_cast<int32_t>(axis))
      .arg(static_cast<int32_t>(code))
      .arg(num_out)
      .buffer(tensor_mem(call, 0))
      .buffer(tensor_mem(call, 1))
      .run1d(call.queue, static_cast<uint64_t>(num_out));
}

void run_argmax(const KernelCall& call) {
  const auto& x = call.t(0);
  int axis = normalized_axis(call, x);
  Layout l = reduction_layout(call);
  int64_t num_out = numel(call.t(1));
  int32_t is_64 = call.t(1).dtype == POLYCHIP_DTYPE_I64 ? 1 : 0;
  Launch(call.device, "reduction", x.dtype, "pc_argmax_kernel")
      .arg(l)
      .arg(static_cast<int32_t>(axis))
      .arg(num_out)
      .buffer(tensor_mem(call, 0))
      .buffer(tensor_mem(call, 1))
      .arg(is_64)
      .run1d(call.queue, static_cast<uint64_t>(num_out));
}

namespace {
struct RowView {
  int64_t outer = 1, len = 1, inner = 1;
};
RowView row_view(const KernelCall& call, const polychip_tensor& x) {
  int axis = normalized_axis(call, x);
  RowView v;
  for (int d = 0; d < x.rank; ++d) {
    if (d < axis) v.outer *= x.shape[d];
    if (d == axis) v.len = x.shape[d];
    if (d > axis) v.inner *= x.shape[d];
  }
  return v;
}

// Both softmax kernels: x's rows along the axis as [outer, len, inner],
// whether the op is the log form, then the buffers of the tensors `slots`;
// one work-item per row.
void launch_softmax(const KernelCall& call, const polychip_tensor& x, const char* kernel,
                    std::initializer_list<int> slots) {
  RowView v = row_view(call, x);
  ContiguousOperands ops(call);
  int32_t log_form = call.op.starts_with("log_") ? 1 : 0;
  Launch(call.device, "softmax", x.dtype, kernel)
      .arg(v.outer)
      .arg(v.len)
      .arg(v.inner)
      .arg(log_form)
      .buffers(ops, slots)
      .run1d(call.queue, static_cast<uint64_t>(v.len ? v.outer * v.inner : 0));
  ops.finish();
}
}  // namespace

void run_softmax(const KernelCall& call) {
  launch_softmax(call, call.t(0), "pc_softmax_kernel", {0, 1});
}

void run_softmax_backward(const KernelCall& call) {
  launch_softmax(call, call.t(1), "pc_softmax_backward_kernel", {0, 1, 2});
}

}  // namespace polychip::opencl
