// Oracle rotate-half rotary embedding; inverse = 1 rotates by -angle.
// Each output is a two-term sum of products computed in long double.
#include "precision/oracle/oracle_ops.hpp"

namespace polychip::precision::oracle_detail {

void rotary_embedding(const Call& c) {
  const auto &x = c.in[0].values, &cosv = c.in[1].values, &sinv = c.in[2].values;
  auto& y = c.out[0].values;
  const int64_t s_len = c.in[0].shape[0], heads = c.in[0].shape[1], d = c.in[0].shape[2];
  const int64_t half = d / 2;
  const long double sign = c.i(attr::kInverse) != 0 ? -1 : 1;
  for (int64_t s = 0; s < s_len; ++s)
    for (int64_t h = 0; h < heads; ++h) {
      const size_t base = (s * heads + h) * d;
      for (int64_t i = 0; i < half; ++i) {
        long double co = cosv[s * half + i], si = sign * sinv[s * half + i];
        long double x1 = x[base + i], x2 = x[base + i + half];
        y[base + i] = static_cast<double>(x1 * co - x2 * si);
        y[base + i + half] = static_cast<double>(x2 * co + x1 * si);
      }
    }
}

}  // namespace polychip::precision::oracle_detail
