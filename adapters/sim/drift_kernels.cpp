#include "drift_kernels.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "reference/nvidia_reference.hpp"

namespace polychip::sim {
namespace {

using precision::HostTensor;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

// `x` with its f32 significand cut to `bits` bits (toward zero).
float truncate_significand(float x, int bits) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  u &= ~((1u << (24 - bits)) - 1u);
  std::memcpy(&x, &u, sizeof u);
  return x;
}

// y = a^T b for f32 [K, M] a and [K, N] b, partial sums truncated.
void weight_gradient_gemm(const HostTensor& a, const HostTensor& b, HostTensor& y, double alpha,
                          int bits) {
  const int64_t kk = a.shape[0], m = a.shape[1], n = b.shape[1];
  std::vector<float> a_rows(static_cast<size_t>(m * kk)), b_cols(static_cast<size_t>(n * kk));
  for (int64_t k = 0; k < kk; ++k) {
    for (int64_t i = 0; i < m; ++i) a_rows[i * kk + k] = static_cast<float>(a.values[k * m + i]);
    for (int64_t j = 0; j < n; ++j) b_cols[j * kk + k] = static_cast<float>(b.values[k * n + j]);
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float* ar = a_rows.data() + i * kk;
      const float* bc = b_cols.data() + j * kk;
      float acc = 0;
      for (int64_t k = 0; k < kk; ++k) acc = truncate_significand(std::fma(ar[k], bc[k], acc), bits);
      y.values[i * n + j] = static_cast<float>(static_cast<float>(alpha) * acc);
    }
}

}  // namespace

void drifting_run(const OpSpec& op, std::span<const HostTensor> inputs,
                  std::span<HostTensor> outputs, const polychip_op_attrs& attrs) {
  reference::nvidia_reference_run(op, inputs, outputs, attrs);
  const std::string_view name = op.name;
  const int bits = env_int("DRIFT_BITS", 16);
  if (name == "gemm" && env_int("DRIFT_GEMM", 1) && outputs[0].dtype == DType::kF32 &&
      inputs[0].shape.size() == 2 && attrs.ints[attr::kTransA] && !attrs.ints[attr::kTransB] &&
      attrs.floats[attr::kBeta] == 0)
    weight_gradient_gemm(inputs[0], inputs[1], outputs[0], attrs.floats[attr::kAlpha], bits);
  if (name == "adamw" && env_int("DRIFT_ADAMW", 0)) {
    // parameters truncated toward zero
    for (double& p : outputs[0].values)
      p = truncate_significand(static_cast<float>(p), env_int("DRIFT_ADAMW_BITS", 14));
  }
}

}  // namespace polychip::sim
