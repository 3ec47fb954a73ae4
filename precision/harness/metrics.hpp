// Error metrics of one output against the float64 oracle, and the check of
// those errors against a Tolerance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "elementwise_error_scale.hpp"
#include "precision/host_tensor.hpp"
#include "tolerance.hpp"

namespace polychip::precision {

// Units in the last place of `dtype` at the exact value `exact` (subnormal
// spacing below the smallest normal; the spacing of the largest finite value
// beyond it).
double ulp_of(double exact, DType dtype);

// The largest error, in ulp of `dt`, that an element may have under the
// ulp-mode tolerance `tol`: the bound plus the exact value's own rounding (a
// correctly rounded result is 0.5 ulp from it; for f64 outputs 1 ulp, as
// the oracle's value is itself a rounded double). Reports name this limit,
// not the bound alone.
double ulp_limit(const Tolerance& tol, DType dt);

struct OutputMetrics {
  int64_t elements = 0;
  double max_abs_error = 0;
  double max_rel_error = 0;   // |d - r| / |r| over r != 0
  double max_ulp_error = 0;   // in the output dtype; Inf for a class mismatch
  double mean_rel_error = 0;  // FlagPerf: mean of |d - r| / |r| over r != 0
  // Largest error divided by the tolerance allowed at that element: <= 1
  // means within tolerance (the ratio to NVIDIA is computed on this).
  double max_tolerance_fraction = 0;
  int64_t mismatches = 0;    // elements beyond tolerance
  int64_t worst_index = -1;  // flat row-major index of the element with the
                             // largest tolerance fraction
  double worst_device = 0, worst_exact = 0;
  bool within_tolerance() const { return mismatches == 0; }
};

// The error of one element: device value `d` against the exact value `r`
// in output dtype `dt`; atol is the close mode's absolute term. fraction <= 1
// means within tolerance.
struct ElementError {
  double abs = 0, rel = 0, ulp = 0, fraction = 0;
  bool counts_relative = false;  // r is finite and non-zero (a mean_rel_error term)
};
ElementError element_error(double d, double r, DType dt, const Tolerance& tol, double atol);

// `device` holds what the device produced (exact dtype values as doubles),
// `exact` the oracle's float64 result; same shape. Non-finite handling: an
// exact result that rounds to Inf must come back as that Inf, NaN as NaN; a
// non-finite device value for a finite exact result is a mismatch.
// `terms_magnitude`: for an output computed as a difference of larger terms
// (cancellation), the largest of those terms; the absolute tolerance of a
// reduction scales with it where it exceeds the output's own largest value.
// `error_scale` (> 0) replaces both: the magnitude a reduction's rounding
// error scales with, where the output's largest values are exact offsets
// that no rounding touches (cross_entropy_backward's -dloss at the target).
// `elementwise` (close mode, reduce_len 1): each element's absolute term
// from its own scale (elementwise_error_scale.hpp) in place of atol_factor.
OutputMetrics compare_output(const HostTensor& device, const HostTensor& exact,
                             const Tolerance& tol, int64_t reduce_len, double terms_magnitude = 0,
                             double error_scale = 0,
                             const std::vector<ElementErrorScale>* elementwise = nullptr);

nlohmann::json to_json(const OutputMetrics& m);

// "0x1.8p+1" (printf %a); "inf", "-inf", "nan" spelled out.
std::string hex_float(double v);

}  // namespace polychip::precision
