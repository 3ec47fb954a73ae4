// cross_entropy and embedding launchers. Both take indices from device
// memory; an index out of range is found by the kernel, which records the
// first offending row, and reported here as INVALID_ARGUMENT (this read
// makes the call wait for its kernel).
#include <climits>

#include <fmt/format.h>

#include "ops.hpp"

namespace polychip::opencl {
namespace {

void check_bad_row(const KernelCall& call, Scratch& flag, const char* what, int64_t limit) {
  int32_t row = flag.read_i32(call.queue);
  if (row != INT_MAX)
    fail(POLYCHIP_INVALID_ARGUMENT,
         fmt::format("{}: {}[{}] is outside [0, {})", call.op, what, row, limit));
}

int32_t is_i64(const polychip_tensor& t) { return t.dtype == POLYCHIP_DTYPE_I64 ? 1 : 0; }

}  // namespace

void run_cross_entropy(const KernelCall& call) {
  const auto& logits = call.t(0);
  int64_t n = logits.shape[0], c = logits.shape[1];
  if (n == 0) return;
  ContiguousOperands ops(call);
  Scratch flag(call.device, 4);
  flag.fill_u32(call.queue, INT_MAX, 4);
  Launch(call.device, "loss", logits.dtype, "pc_cross_entropy_kernel")
      .arg(n)
      .arg(c)
      .buffer(ops.get(0))
      .buffer(ops.get(1))
      .arg(is_i64(call.t(1)))
      .buffer(ops.get(2))
      .buffer(flag.mem())
      .run1d(call.queue, static_cast<uint64_t>(n));
  ops.finish();
  check_bad_row(call, flag, "targets", c);
}

void run_cross_entropy_backward(const KernelCall& call) {
  const auto& logits = call.t(0);
  int64_t n = logits.shape[0], c = logits.shape[1];
  if (n == 0) return;
  ContiguousOperands ops(call);
  Scratch flag(call.device, 4);
  flag.fill_u32(call.queue, INT_MAX, 4);
  Launch(call.device, "loss", logits.dtype, "pc_cross_entropy_backward_kernel")
      .arg(n)
      .arg(c)
      .buffer(ops.get(0))
      .buffer(ops.get(1))
      .arg(is_i64(call.t(1)))
      .buffer(ops.get(2))
      .buffer(ops.get(3))
      .buffer(flag.mem())
      .run1d(call.queue, static_cast<uint64_t>(n));
  ops.finish();
  check_bad_row(call, flag, "targets", c);
}

void run_embedding(const KernelCall& call) {
  const auto& weight = call.t(1);
  int64_t n = call.t(0).shape[0], v = weight.shape[0], d = weight.shape[1];
  if (n == 0 || d == 0) return;
  ContiguousOperands ops(call);
  Scratch flag(call.device, 4);
  flag.fill_u32(call.queue, INT_MAX, 4);
  Launch(call.device, "embedding", weight.dtype, "pc_embedding_kernel")
      .arg(n)
      .arg(v)
      .arg(d)
      .buffer(ops.get(0))
      .arg(is_i64(call.t(0)))
      .buffer(ops.get(1))
      .buffer(ops.get(2))
      .buffer(flag.mem())
      .run1d(call.queue, static_cast<uint64_t>(n * d));
  ops.finish();
  check_bad_row(call, flag, "ids", v);
}

void run_embedding_backward(const KernelCall& call) {
  const auto& dweight = call.t(2);
  int64_t n = call.t(0).shape[0], v = dweight.shape[0], d = dweight.shape[1];
  if (v == 0 || d == 0) return;
  ContiguousOperands ops(call);
  size_t acc_size = dweight.dtype == POLYCHIP_DTYPE_F64 ? 8 : 4;
  size_t acc_bytes = static_cast<size_t>(v * d) * acc_size;
  Scratch acc(call.device, acc_bytes);
  acc.fill_u32(call.queue, 0, acc_bytes);
  Scratch flag(call.device, 4);
  flag.fill_u32(call.queue, INT_MAX, 4);
  Launch(call.device, "embedding", dweight.dtype, "pc_embedding_backward_kernel")
      .arg(n)
      .arg(v)
      .arg(d)
      .buffer(ops.get(0))
      .arg(is_i64(call.t(0)))
      .buffer(ops.get(1))
      .buffer(acc.mem())
      .buffer(ops.get(2))
      .buffer(flag.mem())
      .run1d(call.queue, static_cast<uint64_t>(d));
  ops.finish();
  check_bad_row(call, flag, "ids", v);
}

}  // namespace polychip::opencl
