// Tolerances per op x dtype, read from a data file
// (conformance/data/tolerances.json; format in docs/precision-suite.md).
//
// Two modes:
//  - "ulp": elementwise math, bounded in units in the last place of the
//    output dtype (OpenCL CTS table). Pass when every element's error,
//    measured against the exact (float64) result, is <= bound + 0.5 (a
//    correctly rounded result is 0.5 ulp away from the exact value; for f64
//    outputs bound + 1, as the oracle's f64 value is itself rounded).
//  - "close": |device - exact| <= atol + rtol * |exact| per element, rtol per
//    dtype as torch/FlagGems, atol = atol_factor * reduce_len * scale, scale
//    the largest finite |exact| of that output when reduce_len > 1, else 1
//    (FlagGems' 1e-4 x reduce_dim is
//    absolute; scaling by magnitude keeps the check meaningful for outputs
//    far from 1, and a per-dtype factor keeps f32 accumulation honest).
//    The activations and their gradients scale atol element by element
//    instead (elementwise_error_scale.hpp).
//    Row ops (reductions, the softmax family, norms, losses) whose dtype
//    has a "row_atol_factor" grow with sqrt(reduce_len) instead: rounding
//    errors of a row add up like a random walk, and a linear bound at long
//    rows is wide enough to pass a row op computed at the next lower
//    precision.
// Integer outputs (argmax) must match exactly.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "polychip/dtype.hpp"

namespace polychip::precision {

enum class ToleranceMode { kUlp, kClose, kExact };

struct Tolerance {
  ToleranceMode mode = ToleranceMode::kClose;
  double ulp = 0;          // kUlp
  double rtol = 0;         // kClose
  double atol_factor = 0;  // kClose: atol = atol_factor * growth(reduce_len) * scale
  // kClose: growth(n) = sqrt(n) (row ops with a row_atol_factor), else n.
  bool atol_grows_as_sqrt = false;
  double atol = 0;  // kClose: an absolute bound added to that (exact cases)
  // QualityWarning: the error uses more than `quality_floor` of the
  // tolerance and exceeds `quality_ratio` x the NVIDIA emulation's error.
  double quality_ratio = 4;
  double quality_floor = 0.25;
  std::string source;  // which entries of the file decided it, for reports
};

class ToleranceTable {
 public:
  // Throws Error(INVALID_ARGUMENT) naming the bad entry.
  static ToleranceTable from_json(const nlohmann::json& doc, std::string origin);
  static ToleranceTable from_file(const std::string& path);
  // The table shipped with polychip (conformance/data/tolerances.json,
  // compiled in).
  static const ToleranceTable& builtin();

  // Tolerance of an output of `op` whose dtype is `dtype`.
  Tolerance lookup(const std::string& op, DType dtype) const;
  const std::string& origin() const { return origin_; }

 private:
  nlohmann::json doc_;
  std::string origin_;
};

// GEMM variants that legitimately change the numerics have their own
// tolerance entries, "gemm:<variant>" (the case flag of the same name).
inline constexpr std::string_view kGemmToleranceVariants[] = {"tf32", "rpr"};

nlohmann::json to_json(const Tolerance& t);

// The ops whose tolerance may grow as sqrt(reduce_len): those reducing a
// row or an axis (families reduction, softmax, norm, loss).
bool is_row_op(const std::string& op);

// The close mode's absolute bound for an output whose reduction length is
// `reduce_len` and scale `scale`.
double close_atol(const Tolerance& t, int64_t reduce_len, double scale);
std::string_view tolerance_mode_name(ToleranceMode m);

// How `used` lets through more than `shipped` would ("rtol 0.1 > 0.016",
// "close (rtol 1.3e-06, atol_factor 2.4e-07) where the built-in has ulp 3");
// "" when no bound of it is looser. A change of mode cannot be ordered and
// is always named. Quality thresholds only move warnings and are left out.
std::string loosening(const Tolerance& used, const Tolerance& shipped);

struct ToleranceLoosening {
  std::string op;  // an op of the contract or "gemm:<variant>"
  DType dtype;
  std::string change;  // loosening()'s words
};

// Every op (and gemm variant) x floating dtype whose bound in `table` is
// looser than in the built-in table: what a report must show before a Pass
// under a --tolerances file means anything. Looks every pair up, so a file
// lacking a dtype is refused here, before any case runs.
std::vector<ToleranceLoosening> loosened_past_builtin(const ToleranceTable& table);
nlohmann::json to_json(const std::vector<ToleranceLoosening>& loosened);

}  // namespace polychip::precision
