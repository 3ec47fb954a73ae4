#include "metrics.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "polychip/error.hpp"
#include "value_generator.hpp"

namespace polychip::precision {

double ulp_of(double exact, DType dtype) {
  const FloatFormat f = float_format(dtype);
  double a = std::fabs(exact);
  if (!(a >= f.min_normal())) return f.min_subnormal();  // also NaN
  if (a > f.max_finite) a = f.max_finite;
  int e = std::ilogb(a);
  return std::ldexp(1.0, e - f.mantissa_bits);
}

std::string hex_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

double ulp_limit(const Tolerance& tol, DType dt) {
  // For f64 outputs the oracle's "exact" value is itself a double (up to
  // 0.5 ulp off), so another 0.5 ulp is the reference's own.
  return tol.ulp + (dt == DType::kF64 ? 1.0 : 0.5);
}

ElementError element_error(double d, double r, DType dt, const Tolerance& tol, double atol) {
  const double inf = std::numeric_limits<double>::infinity();
  ElementError e;
  if (tol.mode == ToleranceMode::kExact) {
    bool same = d == r || (std::isnan(d) && std::isnan(r));
    e.abs = same ? 0 : std::fabs(d - r);
    e.fraction = same ? 0 : inf;
    return e;
  }
  const double rounded = round_to_dtype(r, dt);
  // (An overflow rounds to Inf, or to NaN in a dtype without Inf: f8e4m3.)
  if (std::isnan(r) || !std::isfinite(rounded) || !std::isfinite(d)) {
    const bool same = std::isnan(r) || std::isnan(rounded) ? std::isnan(d) : d == rounded;
    if (!same) e.abs = e.rel = e.ulp = e.fraction = inf;
    return e;
  }
  e.abs = std::fabs(d - r);
  e.rel = r != 0 ? e.abs / std::fabs(r) : (e.abs == 0 ? 0 : inf);
  e.ulp = e.abs / ulp_of(r, dt);
  if (tol.mode == ToleranceMode::kUlp) {
    e.fraction = e.ulp / ulp_limit(tol, dt);
  } else {
    double allowed = atol + tol.rtol * std::fabs(r);
    e.fraction = allowed > 0 ? e.abs / allowed : (e.abs == 0 ? 0 : inf);
  }
  e.counts_relative = r != 0;
  return e;
}

OutputMetrics compare_output(const HostTensor& device, const HostTensor& exact,
                             const Tolerance& tol, int64_t reduce_len, double terms_magnitude,
                             double error_scale,
                             const std::vector<ElementErrorScale>* elementwise) {
  if (device.values.size() != exact.values.size())
    throw_error(StatusCode::kInternal, "compare_output: device and exact sizes differ");
  OutputMetrics m;
  m.elements = static_cast<int64_t>(exact.values.size());
  const DType dt = device.dtype;
  // Elementwise outputs (reduce_len 1) are judged element by element, so
  // the absolute term stays at atol_factor; a reduction's rounding error
  // grows with the magnitude of what it sums, so atol scales with the
  // output's largest finite magnitude, or with that of the terms it is
  // the difference of, where they are larger (cancellation).
  double scale = 0;
  if (reduce_len > 1 && error_scale > 0) {
    scale = error_scale;
  } else if (reduce_len > 1) {
    for (double r : exact.values)
      if (std::isfinite(r)) scale = std::max(scale, std::fabs(r));
    if (std::isfinite(terms_magnitude)) scale = std::max(scale, terms_magnitude);
  }
  if (scale == 0) scale = 1;
  const double atol = close_atol(tol, reduce_len, scale);
  if (elementwise && elementwise->size() != exact.values.size())
    throw_error(StatusCode::kInternal, "compare_output: element scales and exact sizes differ");
  double rel_sum = 0;
  int64_t rel_count = 0;
  for (size_t i = 0; i < exact.values.size(); ++i) {
    const double d = device.values[i], r = exact.values[i];
    const ElementError e = element_error(
        d, r, dt, tol, elementwise ? elementwise_atol(tol, dt, (*elementwise)[i]) : atol);
    const double abs_err = e.abs, rel_err = e.rel, ulp_err = e.ulp, fraction = e.fraction;
    if (e.counts_relative) {
      rel_sum += rel_err;
      ++rel_count;
    }
    m.max_abs_error = std::max(m.max_abs_error, abs_err);
    m.max_rel_error = std::max(m.max_rel_error, rel_err);
    m.max_ulp_error = std::max(m.max_ulp_error, ulp_err);
    if (fraction > 1) ++m.mismatches;
    // A zero tolerance makes every miss infinitely far off: among those the
    // worst is the one furthest from its exact value.
    const bool further = std::isinf(fraction) && fraction == m.max_tolerance_fraction &&
                         abs_err > std::fabs(m.worst_device - m.worst_exact);
    if (m.worst_index < 0 || fraction > m.max_tolerance_fraction || further) {
      m.max_tolerance_fraction = fraction;
      m.worst_index = static_cast<int64_t>(i);
      m.worst_device = d;
      m.worst_exact = r;
    }
  }
  m.mean_rel_error = rel_count ? rel_sum / static_cast<double>(rel_count) : 0;
  return m;
}

namespace {
// JSON has no Inf/NaN: non-finite metrics are written as strings.
nlohmann::json number(double v) {
  if (std::isfinite(v)) return v;
  return hex_float(v);
}
}  // namespace

nlohmann::json to_json(const OutputMetrics& m) {
  return {{"elements", m.elements},
          {"max_abs_error", number(m.max_abs_error)},
          {"max_rel_error", number(m.max_rel_error)},
          {"max_ulp_error", number(m.max_ulp_error)},
          {"mean_rel_error", number(m.mean_rel_error)},
          {"max_tolerance_fraction", number(m.max_tolerance_fraction)},
          {"mismatches", m.mismatches}};
}

}  // namespace polychip::precision
