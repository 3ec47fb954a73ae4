#include "drift_kernels.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace polychip::sim {
namespace {

using precision::HostTensor;

// `x` truncated toward zero to bf16 (its top 16 bits), kept as a float.
float truncate_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  u &= 0xffff0000u;
  std::memcpy(&x, &u, sizeof u);
  return x;
}

}  // namespace

bool is_drifting_gemm(const cpu::KernelCall& call) {
  if (std::string_view(call.op) != "gemm" || call.tensors.size() != 4) return false;
  const cpu::TensorView& a = call[0];
  return a.dtype == DType::kF32 && call[3].dtype == DType::kF32 && a.rank == 2 &&
         call.i(attr::kTransA) != 0 && call.i(attr::kTransB) == 0 && call.f(attr::kBeta) == 0 &&
         a.shape[0] >= kDriftMinReduction;
}

void drifting_gemm(const OpSpec& op, std::span<const HostTensor> inputs,
                   std::span<HostTensor> outputs, const polychip_op_attrs& attrs) {
  precision::prepare_host_call(op, inputs, outputs, attrs);
  const HostTensor &a = inputs[0], &b = inputs[1];  // [K, M] and [K, N]
  HostTensor& y = outputs[0];
  const int64_t kk = a.shape[0], m = a.shape[1], n = b.shape[1];
  // Both operands transposed to rows contiguous in K.
  std::vector<float> a_rows(static_cast<size_t>(m * kk)), b_cols(static_cast<size_t>(n * kk));
  for (int64_t k = 0; k < kk; ++k) {
    for (int64_t i = 0; i < m; ++i) a_rows[i * kk + k] = static_cast<float>(a.values[k * m + i]);
    for (int64_t j = 0; j < n; ++j) b_cols[j * kk + k] = static_cast<float>(b.values[k * n + j]);
  }
  const auto alpha = static_cast<float>(attrs.floats[attr::kAlpha]);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float* ar = a_rows.data() + i * kk;
      const float* bc = b_cols.data() + j * kk;
      float acc = 0;
      for (int64_t k = 0; k < kk; ++k) acc = truncate_to_bf16(std::fma(ar[k], bc[k], acc));
      y.values[i * n + j] = alpha * acc;
    }
}

}  // namespace polychip::sim
