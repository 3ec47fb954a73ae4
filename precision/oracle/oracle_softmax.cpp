// Oracle softmax family along one axis, in long double with the maximum
// subtracted (so exp never overflows) and compensated sums.
#include <cmath>
#include <limits>
#include <string_view>

#include "precision/oracle/exact_sum.hpp"
#include "precision/oracle/oracle_ops.hpp"

namespace polychip::precision::oracle_detail {

void softmax(const Call& c) {
  const bool log_form = std::string_view(c.op.name) == "log_softmax";
  const auto& x = c.in[0].values;
  auto& y = c.out[0].values;
  AxisSplit s = split_axis(c.in[0].shape, c.i(attr::kAxis));
  std::vector<long double> e(static_cast<size_t>(s.length));
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t r = 0; r < s.inner; ++r) {
      long double mx = -std::numeric_limits<long double>::infinity();
      bool nan = false;
      for (int64_t l = 0; l < s.length; ++l) {
        double v = x[s.at(o, l, r)];
        nan = nan || std::isnan(v);
        if (v > mx) mx = v;
      }
      ExactSum sum;
      for (int64_t l = 0; l < s.length; ++l) {
        e[l] = std::exp(x[s.at(o, l, r)] - mx);
        sum.add(e[l]);
      }
      long double total = sum.value(), log_total = std::log(total);
      for (int64_t l = 0; l < s.length; ++l) {
        long double shifted = x[s.at(o, l, r)] - mx;
        long double v = log_form ? shifted - log_total : e[l] / total;
        y[s.at(o, l, r)] = nan ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(v);
      }
    }
  }
}

// softmax:     dx = y (dy - sum(dy y))
// log_softmax: dx = dy - exp(y) sum(dy)
void softmax_backward(const Call& c) {
  const bool log_form = std::string_view(c.op.name) == "log_softmax_backward";
  const auto &dy = c.in[0].values, &y = c.in[1].values;
  auto& dx = c.out[0].values;
  AxisSplit s = split_axis(c.in[0].shape, c.i(attr::kAxis));
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t r = 0; r < s.inner; ++r) {
      ExactSum sum;
      for (int64_t l = 0; l < s.length; ++l) {
        size_t k = s.at(o, l, r);
        sum.add(log_form ? static_cast<long double>(dy[k])
                         : static_cast<long double>(dy[k]) * y[k]);
      }
      long double total = sum.value();
      for (int64_t l = 0; l < s.length; ++l) {
        size_t k = s.at(o, l, r);
        long double g = dy[k], out = y[k];
        dx[k] = static_cast<double>(log_form ? g - std::exp(out) * total : out * (g - total));
      }
    }
  }
}

}  // namespace polychip::precision::oracle_detail
