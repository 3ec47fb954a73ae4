#include "f16_row_precision.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernel_registry.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::sim {
namespace {

// reduce_max and argmax are left out: they pick an element and round nothing.
constexpr std::string_view kRowOps[] = {"reduce_sum",
                                        "reduce_mean",
                                        "l2_norm",
                                        "softmax",
                                        "log_softmax",
                                        "softmax_backward",
                                        "log_softmax_backward",
                                        "layernorm",
                                        "layernorm_backward",
                                        "rmsnorm",
                                        "rmsnorm_backward",
                                        "cross_entropy",
                                        "cross_entropy_backward"};

// Calls `f(element address)` for every element of `v`.
template <class F>
void for_each_element(const cpu::TensorView& v, F f) {
  const int64_t n = v.numel();
  const int64_t es = static_cast<int64_t>(dtype_size(v.dtype));
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0, rest = i;
    for (int d = v.rank - 1; d >= 0; --d) {
      offset += rest % v.shape[d] * v.strides[d];
      rest /= v.shape[d];
    }
    f(v.data + offset * es);
  }
}

// Bytes from element [0, ..., 0] to one past the last element.
size_t extent_bytes(const cpu::TensorView& v) {
  if (v.numel() == 0) return 0;
  int64_t last = 0;
  for (int d = 0; d < v.rank; ++d) last += (v.shape[d] - 1) * v.strides[d];
  return static_cast<size_t>(last + 1) * dtype_size(v.dtype);
}

void round_in_place(const cpu::TensorView& v) {
  for_each_element(v, [](char* p) {
    float x;
    std::memcpy(&x, p, sizeof x);
    x = static_cast<float>(round_to_f16_precision(x));
    std::memcpy(p, &x, sizeof x);
  });
}

}  // namespace

bool is_f16_precision_row_op(std::string_view op) {
  return std::find(std::begin(kRowOps), std::end(kRowOps), op) != std::end(kRowOps);
}

double round_to_f16_precision(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  int e = 0;
  const double m = std::frexp(v, &e);  // |m| in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(m, 11)), e - 11);
}

polychip_status run_at_f16_precision(const cpu::KernelCall& call) {
  if (call.tensors.empty() || call.tensors[0].dtype != DType::kF32) return cpu::run_kernel(call);
  const OpSpec* op = find_op(call.op);
  if (!op) return cpu::run_kernel(call);
  // The inputs are the caller's: round copies of them (same strides).
  std::vector<cpu::TensorView> views(call.tensors.begin(), call.tensors.end());
  std::vector<std::vector<char>> copies(views.size());
  for (size_t k = 0; k < views.size() && k < op->tensors.size(); ++k) {
    if (op->tensors[k].is_output || views[k].dtype != DType::kF32) continue;
    copies[k].assign(views[k].data, views[k].data + extent_bytes(views[k]));
    views[k].data = copies[k].data();
    round_in_place(views[k]);
  }
  const polychip_status st = cpu::run_kernel({call.op, views, call.attrs, call.numerics});
  if (st != POLYCHIP_OK) return st;
  for (size_t k = 0; k < views.size() && k < op->tensors.size(); ++k)
    if (op->tensors[k].is_output && views[k].dtype == DType::kF32) round_in_place(views[k]);
  return st;
}

}  // namespace polychip::sim
