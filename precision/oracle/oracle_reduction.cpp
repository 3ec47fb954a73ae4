// Oracle reductions along one axis: compensated long double sums; max and
// argmax propagate NaN (argmax: the first NaN, else the first maximum).
// An empty axis gives sum 0, mean NaN (0/0), max -Inf, l2_norm 0.
#include <cmath>
#include <limits>
#include <string_view>

#include "precision/oracle/exact_sum.hpp"
#include "precision/oracle/oracle_ops.hpp"

namespace polychip::precision::oracle_detail {

void reduction(const Call& c) {
  std::string_view name = c.op.name;
  const auto& x = c.in[0].values;
  auto& y = c.out[0].values;
  AxisSplit s = split_axis(c.in[0].shape, c.i(attr::kAxis));
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t r = 0; r < s.inner; ++r) {
      double& out = y[o * s.inner + r];
      if (name == "reduce_max" || name == "argmax") {
        double best = -std::numeric_limits<double>::infinity();
        int64_t best_at = 0;
        for (int64_t l = 0; l < s.length; ++l) {
          double v = x[s.at(o, l, r)];
          if (std::isnan(v)) {
            best = v;
            best_at = l;
            break;
          }
          if (v > best || l == 0) {
            best = v;
            best_at = l;
          }
        }
        out = name == "argmax" ? static_cast<double>(best_at) : best;
        continue;
      }
      ExactSum sum;
      for (int64_t l = 0; l < s.length; ++l) {
        long double v = x[s.at(o, l, r)];
        sum.add(name == "l2_norm" ? v * v : v);
      }
      long double total = sum.value();
      if (name == "reduce_mean")
        total /= static_cast<long double>(s.length);
      else if (name == "l2_norm")
        total = std::sqrt(total);
      out = static_cast<double>(total);
    }
  }
}

}  // namespace polychip::precision::oracle_detail
