// Emulated cross-entropy, as a fused kernel computes it in float (one warp
// per row up to 1024 classes, a 256-thread block beyond; reduction_order.hpp):
//   max, sum = sum exp(x - max), loss = (log(sum) + max) - x[target] (f32);
//   backward: dlogits = dloss * (exp(x - max) / sum - [c == target]),
//   rounded once to the logits' dtype.
#include <cmath>
#include <limits>

#include "reference/cuda_math.hpp"
#include "reference/emulation_ops.hpp"
#include "reference/reduction_order.hpp"

namespace polychip::reference::emulation {
namespace {

template <typename A>
struct RowStats {
  A max, sum;
};

template <typename A>
RowStats<A> row_stats(const double* row, int64_t classes) {
  const int lanes = row_lanes(classes);
  auto max_combine = [](A a, A b) { return std::isnan(a) || a > b ? a : b; };
  A mx = strided_tree_reduce<A>(
      classes, lanes, -std::numeric_limits<A>::infinity(),
      [&](A acc, int64_t j) { return max_combine(acc, static_cast<A>(row[j])); }, max_combine);
  A sum = strided_tree_reduce<A>(
      classes, lanes, A(0),
      [&](A acc, int64_t j) { return acc + cuda_exp(static_cast<A>(row[j]) - mx); },
      [](A a, A b) { return a + b; });
  return {mx, sum};
}

template <typename A>
void cross_entropy_as(const Call& c) {
  const auto &logits = c.in[0].values, &targets = c.in[1].values;
  HostTensor& loss = c.out[0];
  const int64_t n = c.in[0].shape[0], classes = c.in[0].shape[1];
  for (int64_t row = 0; row < n; ++row) {
    int64_t t = precision::host_index(c.op, "targets", targets[row], row, classes);
    const double* x = logits.data() + row * classes;
    RowStats<A> st = row_stats<A>(x, classes);
    loss.values[row] = to_output(loss.dtype, (cuda_log(st.sum) + st.max) - static_cast<A>(x[t]));
  }
}

template <typename A>
void cross_entropy_backward_as(const Call& c) {
  const auto &logits = c.in[0].values, &targets = c.in[1].values, &dloss = c.in[2].values;
  HostTensor& dlogits = c.out[0];
  const int64_t n = c.in[0].shape[0], classes = c.in[0].shape[1];
  for (int64_t row = 0; row < n; ++row) {
    int64_t t = precision::host_index(c.op, "targets", targets[row], row, classes);
    const double* x = logits.data() + row * classes;
    RowStats<A> st = row_stats<A>(x, classes);
    const A dl = static_cast<A>(dloss[row]);
    for (int64_t j = 0; j < classes; ++j) {
      A p = cuda_exp(static_cast<A>(x[j]) - st.max) / st.sum;
      dlogits.values[row * classes + j] =
          to_output(dlogits.dtype, dl * (p - (j == t ? A(1) : A(0))));
    }
  }
}

}  // namespace

void cross_entropy(const Call& c) {
  if (c.compute_dtype() == DType::kF64)
    cross_entropy_as<double>(c);
  else
    cross_entropy_as<float>(c);
}

void cross_entropy_backward(const Call& c) {
  if (c.compute_dtype() == DType::kF64)
    cross_entropy_backward_as<double>(c);
  else
    cross_entropy_backward_as<float>(c);
}

}  // namespace polychip::reference::emulation
