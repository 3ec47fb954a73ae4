// Rotate-half rotary embedding on row-major x [S, H, D] with f32 cos/sin
// tables [S, D/2]; inverse = 1 negates sin (the backward pass). Each
// output is computed in double and rounded once.
#include "element_types.hpp"
#include "kernel_registry.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::cpu {
namespace {

polychip_status rotary_embedding(const KernelCall& c) {
  const int64_t seq = c[0].shape[0], heads = c[0].shape[1], d = c[0].shape[2], half = d / 2;
  const double sign = c.i(attr::kInverse) != 0 ? -1.0 : 1.0;
  return visit_float(c[0].dtype, c.op, [&](auto s) {
    using S = decltype(s);
    const float* cos_t = c[1].as<float>();
    const float* sin_t = c[2].as<float>();
    for (int64_t p = 0; p < seq; ++p)
      for (int64_t h = 0; h < heads; ++h) {
        const S* x = c[0].as<S>() + (p * heads + h) * d;
        S* y = c[3].as<S>() + (p * heads + h) * d;
        for (int64_t i = 0; i < half; ++i) {
          const double cs = cos_t[p * half + i], sn = sign * sin_t[p * half + i];
          const double x1 = to_f64(x[i]), x2 = to_f64(x[i + half]);
          y[i] = from_f64<S>(x1 * cs - x2 * sn);
          y[i + half] = from_f64<S>(x2 * cs + x1 * sn);
        }
      }
    return kOk;
  });
}

const NamedKernel kKernels[] = {{"rotary_embedding", rotary_embedding}};

}  // namespace

std::span<const NamedKernel> rotary_kernels() { return kKernels; }

}  // namespace polychip::cpu
