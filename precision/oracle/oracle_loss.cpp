// Oracle cross-entropy: loss = logsumexp(logits) - logits[target], and its
// gradient dloss (softmax - onehot), in long double.
#include <cmath>
#include <limits>

#include "precision/oracle/exact_sum.hpp"
#include "precision/oracle/oracle_ops.hpp"

namespace polychip::precision::oracle_detail {
namespace {

using LD = long double;

struct RowStats {
  LD max;
  LD sum_exp;  // sum exp(x - max)
};

RowStats row_stats(const double* row, int64_t classes) {
  LD mx = -std::numeric_limits<LD>::infinity();
  for (int64_t j = 0; j < classes; ++j)
    if (row[j] > mx || std::isnan(row[j])) mx = row[j];
  ExactSum sum;
  for (int64_t j = 0; j < classes; ++j) sum.add(std::exp(row[j] - mx));
  return {mx, sum.value()};
}

}  // namespace

void cross_entropy(const Call& c) {
  const auto &logits = c.in[0].values, &targets = c.in[1].values;
  auto& loss = c.out[0].values;
  const int64_t n = c.in[0].shape[0], classes = c.in[0].shape[1];
  for (int64_t row = 0; row < n; ++row) {
    int64_t t = host_index(c.op, "targets", targets[row], row, classes);
    const double* x = logits.data() + row * classes;
    RowStats st = row_stats(x, classes);
    loss[row] = static_cast<double>((st.max - x[t]) + std::log(st.sum_exp));
  }
}

void cross_entropy_backward(const Call& c) {
  const auto &logits = c.in[0].values, &targets = c.in[1].values, &dloss = c.in[2].values;
  auto& dlogits = c.out[0].values;
  const int64_t n = c.in[0].shape[0], classes = c.in[0].shape[1];
  for (int64_t row = 0; row < n; ++row) {
    int64_t t = host_index(c.op, "targets", targets[row], row, classes);
    const double* x = logits.data() + row * classes;
    RowStats st = row_stats(x, classes);
    // p_t - 1 = -(sum over the other classes) / sum: no cancellation.
    ExactSum others;
    for (int64_t j = 0; j < classes; ++j)
      if (j != t) others.add(std::exp(x[j] - st.max));
    for (int64_t j = 0; j < classes; ++j) {
      LD g = j == t ? -others.value() / st.sum_exp : std::exp(x[j] - st.max) / st.sum_exp;
      dlogits[row * classes + j] = static_cast<double>(dloss[row] * g);
    }
  }
}

}  // namespace polychip::precision::oracle_detail
