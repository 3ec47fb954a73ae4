// cross_entropy and embedding launchers. Both take indices from device
// memory; an index out of range is found by the kernel, which records the
// first offending row, and reported here as INVALID_ARGUMENT (this read
// makes the call wait for its kernel).
#include <climits>

#include <fmt/format.h>

#include "ops.hpp"

namespace polychip::opencl {
namespace {

// Where a kernel records the first row with an index out of range
// (INT_MAX: none).
class BadRowFlag {
 public:
  explicit BadRowFlag(const KernelCall& call) : call_(call), scratch_(call.device, 4) {
    scratch_.fill_u32(call.queue, INT_MAX, 4);
  }
  cl_mem mem() const { return scratch_.mem(); }
  // Waits for the kernel; INVALID_ARGUMENT naming the row of `what` it
  // recorded, if any.
  void check(const char* what, int64_t limit) {
    int32_t row = scratch_.read_i32(call_.queue);
    if (row != INT_MAX)
      fail(POLYCHIP_INVALID_ARGUMENT,
           fmt::format("{}: {}[{}] is outside [0, {})", call_.op, what, row, limit));
  }

 private:
  const KernelCall& call_;
  Scratch scratch_;
};

int32_t is_i64(const polychip_tensor& t) { return t.dtype == POLYCHIP_DTYPE_I64 ? 1 : 0; }

// cross_entropy and its backward: n, c, logits, targets (and whether they
// are i64), then the buffers of `outputs`; one work-item per row.
void run_cross_entropy_kernel(const KernelCall& call, const char* kernel,
                              std::initializer_list<int> outputs) {
  const auto& logits = call.t(0);
  int64_t n = logits.shape[0], c = logits.shape[1];
  if (n == 0) return;
  ContiguousOperands ops(call);
  BadRowFlag flag(call);
  Launch(call.device, "loss", logits.dtype, kernel)
      .arg(n)
      .arg(c)
      .buffers(ops, {0, 1})
      .arg(is_i64(call.t(1)))
      .buffers(ops, outputs)
      .buffer(flag.mem())
      .run1d(call.queue, static_cast<uint64_t>(n));
  ops.finish();
  flag.check("targets", c);
}

// The arguments both embedding kernels start with: n, v, d, the ids (and
// whether they are i64), then the second tensor.
Launch embedding_launch(const KernelCall& call, ContiguousOperands& ops, polychip_dtype dtype,
                        const char* kernel, int64_t n, int64_t v, int64_t d) {
  Launch launch(call.device, "embedding", dtype, kernel);
  launch.arg(n).arg(v).arg(d).buffer(ops.get(0)).arg(is_i64(call.t(0))).buffer(ops.get(1));
  return launch;
}

}  // namespace

void run_cross_entropy(const KernelCall& call) {
  run_cross_entropy_kernel(call, "pc_cross_entropy_kernel", {2});
}

void run_cross_entropy_backward(const KernelCall& call) {
  run_cross_entropy_kernel(call, "pc_cross_entropy_backward_kernel", {2, 3});
}

void run_embedding(const KernelCall& call) {
  const auto& weight = call.t(1);
  int64_t n = call.t(0).shape[0], v = weight.shape[0], d = weight.shape[1];
  if (n == 0 || d == 0) return;
  ContiguousOperands ops(call);
  BadRowFlag flag(call);
  embedding_launch(call, ops, weight.dtype, "pc_embedding_kernel", n, v, d)
      .buffer(ops.get(2))
      .buffer(flag.mem())
      .run1d(call.queue, static_cast<uint64_t>(n * d));
  ops.finish();
  flag.check("ids", v);
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
  BadRowFlag flag(call);
  embedding_launch(call, ops, dweight.dtype, "pc_embedding_backward_kernel", n, v, d)
      .buffer(acc.mem())
      .buffer(ops.get(2))
      .buffer(flag.mem())
      .run1d(call.queue, static_cast<uint64_t>(d));
  ops.finish();
  flag.check("ids", v);
}

}  // namespace polychip::opencl
