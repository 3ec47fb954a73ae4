// Elementwise launchers: unary, unary backward, binary, fill, copy, cast,
// adamw and rotary embedding.
#include <cmath>
#include <cstring>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "ops.hpp"
#include "polychip/dtype.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::opencl {
namespace {

// Op codes; must match adapters/opencl_c/elementwise.cl.
int unary_code(const KernelCall& call) {
  static const std::pair<std::string_view, int> codes[] = {
      {"neg", 0},  {"exp", 1},     {"log", 2},  {"sqrt", 3}, {"rsqrt", 4},
      {"tanh", 5}, {"sigmoid", 6}, {"relu", 7}, {"silu", 10}};
  if (call.op == "gelu") return call.i(attr::kGeluApproximate) ? 9 : 8;
  for (auto [name, code] : codes)
    if (call.op == name) return code;
  fail(POLYCHIP_NOT_FOUND, fmt::format("no unary opencl kernel for '{}'", call.op));
}

int unary_backward_code(const KernelCall& call) {
  if (call.op == "relu_backward") return 0;
  if (call.op == "gelu_backward") return call.i(attr::kGeluApproximate) ? 2 : 1;
  if (call.op == "silu_backward") return 3;
  if (call.op == "sigmoid_backward") return 4;
  if (call.op == "tanh_backward") return 5;
  fail(POLYCHIP_NOT_FOUND, fmt::format("no unary backward opencl kernel for '{}'", call.op));
}

int binary_code(const KernelCall& call) {
  if (call.op == "add") return 0;
  if (call.op == "sub") return 1;
  if (call.op == "mul") return 2;
  if (call.op == "div") return 3;
  fail(POLYCHIP_NOT_FOUND, fmt::format("no binary opencl kernel for '{}'", call.op));
}

// The strided kernels with an op code: the layout of the tensors `slots`,
// the code, then their buffers; one work-item per element.
void launch_strided(const KernelCall& call, const char* kernel, int code,
                    std::initializer_list<int> slots) {
  Layout l = make_layout(call, slots);
  Launch launch(call.device, "elementwise", call.t(0).dtype, kernel);
  launch.arg(l).arg(code);
  for (int slot : slots) launch.buffer(tensor_mem(call, slot));
  launch.run1d(call.queue, static_cast<uint64_t>(l.numel));
}

const char* raw_suffix(polychip_dtype dtype) {
  switch (element_size(dtype)) {
    case 8:
      return "u64";
    case 4:
      return "u32";
    case 2:
      return "u16";
    default:
      fail(POLYCHIP_UNSUPPORTED, fmt::format("no raw opencl kernel for dtype {}", dtype));
  }
}

}  // namespace

void run_unary(const KernelCall& call) {
  launch_strided(call, "pc_unary_kernel", unary_code(call), {0, 1});
}

void run_unary_backward(const KernelCall& call) {
  launch_strided(call, "pc_unary_backward_kernel", unary_backward_code(call), {0, 1, 2});
}

void run_binary(const KernelCall& call) {
  launch_strided(call, "pc_binary_kernel", binary_code(call), {0, 1, 2});
}

void run_fill(const KernelCall& call) {
  Layout l = make_layout(call, {0});
  polychip_dtype dtype = call.t(0).dtype;
  // The value rounded to the dtype on the host (one RNE), written as bits.
  uint64_t bits = 0;
  store_from_f64(call.f(attr::kFillValue), &bits, static_cast<DType>(dtype));
  std::string kernel = fmt::format("pc_fill_{}", raw_suffix(dtype));
  Launch launch(call.device, "elementwise", POLYCHIP_DTYPE_F32, kernel.c_str());
  launch.arg(l).buffer(tensor_mem(call, 0));
  switch (element_size(dtype)) {
    case 8:
      launch.arg(bits);
      break;
    case 4:
      launch.arg(static_cast<uint32_t>(bits));
      break;
    default:
      launch.arg(static_cast<uint16_t>(bits));
      break;
  }
  launch.run1d(call.queue, static_cast<uint64_t>(l.numel));
}

void run_copy(const KernelCall& call) {
  Layout l = make_layout(call, {0, 1});
  std::string kernel = fmt::format("pc_copy_{}", raw_suffix(call.t(0).dtype));
  Launch(call.device, "elementwise", POLYCHIP_DTYPE_F32, kernel.c_str())
      .arg(l)
      .buffer(tensor_mem(call, 0))
      .buffer(tensor_mem(call, 1))
      .run1d(call.queue, static_cast<uint64_t>(l.numel));
}

void run_cast(const KernelCall& call) {
  if (!call.device.has_fp64)
    fail(POLYCHIP_UNSUPPORTED, "cast needs fp64 on the opencl device (it rounds through double)");
  Layout l = make_layout(call, {0, 1});
  Launch(call.device, "cast", POLYCHIP_DTYPE_F32, "pc_cast_kernel")
      .arg(l)
      .arg(static_cast<int32_t>(call.t(0).dtype))
      .arg(static_cast<int32_t>(call.t(1).dtype))
      .buffer(tensor_mem(call, 0))
      .buffer(tensor_mem(call, 1))
      .run1d(call.queue, static_cast<uint64_t>(l.numel));
}

void run_adamw(const KernelCall& call) {
  int64_t n = numel(call.t(0));
  ContiguousOperands ops(call);
  double beta1 = call.f(attr::kBeta1), beta2 = call.f(attr::kBeta2);
  double step = static_cast<double>(call.i(attr::kStep));
  Launch launch(call.device, "elementwise", call.t(1).dtype, "pc_adamw_kernel");
  launch.arg(n);
  for (int k = 0; k < 7; ++k) launch.buffer(ops.get(k));
  // WACC scalars: double where the device has fp64 (see common.cl).
  const polychip_dtype wacc = call.device.has_fp64 ? POLYCHIP_DTYPE_F64 : POLYCHIP_DTYPE_F32;
  for (double v :
       {call.f(attr::kLr), beta1, beta2, call.f(attr::kAdamEps), call.f(attr::kWeightDecay),
        1.0 - std::pow(beta1, step), 1.0 - std::pow(beta2, step)})
    launch.arg(AccScalar(wacc, v));
  launch.run1d(call.queue, static_cast<uint64_t>(n));
  ops.finish();
}

void run_rotary(const KernelCall& call) {
  const auto& x = call.t(0);
  ContiguousOperands ops(call);
  int64_t s = x.shape[0], h = x.shape[1], d = x.shape[2];
  float sign = call.i(attr::kInverse) ? -1.0f : 1.0f;
  Launch(call.device, "elementwise", x.dtype, "pc_rotary_kernel")
      .arg(s)
      .arg(h)
      .arg(d)
      .buffer(ops.get(0))
      .buffer(ops.get(1))
      .buffer(ops.get(2))
      .buffer(ops.get(3))
      .arg(sign)
      .run1d(call.queue, static_cast<uint64_t>(s * h * (d / 2)));
  ops.finish();
}

}  // namespace polychip::opencl
