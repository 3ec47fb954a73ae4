// AdamW step on f32 master weights (grad in the compute dtype). Each
// element is updated in double from its f32 inputs and each output rounded
// once to f32; outputs may be the inputs (every element reads its inputs
// before writing).
#include <cmath>

#include "element_types.hpp"
#include "kernel_registry.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::cpu {
namespace {

polychip_status adamw(const KernelCall& c) {
  const int64_t n = c[0].shape[0];
  const double lr = c.f(attr::kLr), b1 = c.f(attr::kBeta1), b2 = c.f(attr::kBeta2);
  const double eps = c.f(attr::kAdamEps), wd = c.f(attr::kWeightDecay);
  const double t = static_cast<double>(c.i(attr::kStep));
  const double correction1 = 1.0 - std::pow(b1, t), correction2 = 1.0 - std::pow(b2, t);
  return visit_float(c[1].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    const float* param = c[0].as<float>();
    const S* grad = c[1].as<S>();
    const float* m = c[2].as<float>();
    const float* v = c[3].as<float>();
    float* param_out = c[4].as<float>();
    float* m_out = c[5].as<float>();
    float* v_out = c[6].as<float>();
    for (int64_t i = 0; i < n; ++i) {
      const double g = static_cast<float>(to_f64(grad[i]));  // "g converted to f32"
      const double p = param[i];
      const double m1 = b1 * m[i] + (1.0 - b1) * g;
      const double v1 = b2 * v[i] + (1.0 - b2) * g * g;
      const double update = (m1 / correction1) / (std::sqrt(v1 / correction2) + eps);
      param_out[i] = static_cast<float>(p - lr * (wd * p + update));
      m_out[i] = static_cast<float>(m1);
      v_out[i] = static_cast<float>(v1);
    }
    return kOk;
  });
}

const NamedKernel kKernels[] = {{"adamw", adamw}};

}  // namespace

std::span<const NamedKernel> optimizer_kernels() { return kKernels; }

}  // namespace polychip::cpu
