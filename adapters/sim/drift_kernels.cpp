#include "drift_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace polychip::sim {
namespace {

using precision::HostTensor;

// acc[j] = truncate_to_bf16(fma(a, b[j], acc[j])) for j < n: one K step of
// n outputs, written so the compiler vectorizes it across j (each output
// still sums in K order; FMA is exactly rounded whichever instruction runs).
template <bool kFmaInstruction>
void truncated_fma_row(float a, const float* b, float* acc, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    float x;
    if constexpr (kFmaInstruction)
      x = __builtin_fmaf(a, b[j], acc[j]);
    else
      x = std::fma(a, b[j], acc[j]);
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    u &= 0xffff0000u;  // toward zero, to bf16's 8 significant bits
    std::memcpy(&acc[j], &u, sizeof u);
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2,fma"))) void truncated_fma_row_avx2(float a, const float* b, float* acc,
                                                                int64_t n) {
  truncated_fma_row<true>(a, b, acc, n);
}
bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

void truncated_fma(float a, const float* b, float* acc, int64_t n) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (cpu_has_avx2_fma()) return truncated_fma_row_avx2(a, b, acc, n);
#endif
  truncated_fma_row<false>(a, b, acc, n);
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
  const std::vector<float> a_f(a.values.begin(), a.values.end());
  const std::vector<float> b_f(b.values.begin(), b.values.end());  // exact: f32 values
  const auto alpha = static_cast<float>(attrs.floats[attr::kAlpha]);
  std::vector<float> acc(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {  // output row i: every column's sum in K order
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t k = 0; k < kk; ++k)
      truncated_fma(a_f[k * m + i], b_f.data() + k * n, acc.data(), n);
    for (int64_t j = 0; j < n; ++j) y.values[i * n + j] = alpha * acc[j];
  }
}

}  // namespace polychip::sim
