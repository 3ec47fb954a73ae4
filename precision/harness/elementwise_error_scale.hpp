// The absolute part of the close tolerance of the activations and their
// gradients (sigmoid, gelu, silu and their backward ops, tanh_backward),
// element by element, in place of one absolute floor for a whole output.
//
// A floor of atol_factor (f32 2.4e-7) lets every result below it come back
// as 0: a kernel flushing subnormal inputs and outputs passed. What an
// honest kernel's error scales with instead, per element:
//  - the terms its formula adds up (`terms`): where they cancel, near a zero
//    crossing of a gradient or where 1 - s(x) or 1 - tanh(x)^2 saturates,
//    each term's rounding is larger than the result;
//  - an intermediate that underflows the type the op computes in (f32 for
//    f32, f16 and bf16; f64 for f64): NVIDIA's 1 / (1 + e^-x) is 0 once e^-x
//    overflows, its x * Phi(x) once 1 + erf(x / sqrt 2) rounds to 0. Such an
//    intermediate loses up to the compute type's smallest normal, times
//    what multiplies it (`underflow`: the smallest normal, times |x| in
//    gelu and silu, times |dy| (1 + |x|) in a gradient);
//  - the output's own rounding into the subnormal range: one subnormal of
//    its dtype.
// So a flushed subnormal input, gradient or result fails wherever it is
// larger than these; a result the terms make small passes.
#pragma once

#include <string_view>
#include <vector>

#include "polychip/dtype.hpp"
#include "tolerance.hpp"

namespace polychip::precision {

struct Problem;

struct ElementErrorScale {
  double terms = 0;      // scales atol_factor
  double underflow = 0;  // absolute, added as is
};

// The ops judged this way (close mode, elementwise, one output).
bool has_elementwise_error_scale(std::string_view op);

// One element of an activation (x) or of a gradient (dy, x); `tanh_form`
// selects gelu's tanh approximation.
ElementErrorScale activation_error_scale(std::string_view op, DType dtype, double x);
ElementErrorScale gradient_error_scale(std::string_view op, bool tanh_form, DType dtype, double dy,
                                       double x);

// Per element of the problem's output; empty for other ops.
std::vector<ElementErrorScale> elementwise_error_scales(const Problem& p);

// The absolute term of the close tolerance at an element of that scale.
double elementwise_atol(const Tolerance& tol, DType dtype, const ElementErrorScale& s);

}  // namespace polychip::precision
