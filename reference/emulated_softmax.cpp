// Emulated softmax family, after PyTorch's softmax kernels: a row along a
// contiguous axis of up to 1024 elements is handled by one warp (the
// "persistent" warp softmax: lanes = next power of two <= 32, each lane
// owning elements lane, lane + lanes, ...; butterfly reductions); longer
// rows by a 256-thread block; a strided axis by one thread per output
// walking the axis in order. Max subtracted; exp(x - max) computed once.
//  softmax:      y = exp(x - max) / sum
//  log_softmax:  y = (x - max) - log(sum)
//  backward:     g = dy * y; dx = g - y * sum(g)      (softmax)
//                dx = dy - exp(y) * sum(dy)           (log_softmax)
#include <cmath>
#include <limits>
#include <string_view>

#include "reference/cuda_math.hpp"
#include "reference/emulation_ops.hpp"
#include "reference/reduction_order.hpp"

namespace polychip::reference::emulation {
namespace {

template <typename A>
A max_combine(A a, A b) {
  return std::isnan(a) || a > b ? a : b;
}

template <typename A, typename Value>
A row_sum(int64_t n, int lanes, Value value) {
  return strided_tree_reduce<A>(
      n, lanes, A(0), [&](A acc, int64_t l) { return acc + value(l); },
      [](A a, A b) { return a + b; });
}

template <typename A>
void softmax_as(const Call& c) {
  const bool log_form = std::string_view(c.op.name) == "log_softmax";
  const auto& x = c.in[0].values;
  HostTensor& y = c.out[0];
  AxisSplit s = split_axis(c.in[0].shape, c.i(attr::kAxis));
  const int lanes = s.inner == 1 ? row_lanes(s.length) : 1;
  std::vector<A> e(static_cast<size_t>(s.length));
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t r = 0; r < s.inner; ++r) {
      auto value = [&](int64_t l) { return static_cast<A>(x[s.at(o, l, r)]); };
      A mx = strided_tree_reduce<A>(
          s.length, lanes, -std::numeric_limits<A>::infinity(),
          [&](A acc, int64_t l) { return max_combine(acc, value(l)); }, max_combine<A>);
      for (int64_t l = 0; l < s.length; ++l) e[l] = cuda_exp(value(l) - mx);
      A sum = row_sum<A>(s.length, lanes, [&](int64_t l) { return e[l]; });
      A log_sum = cuda_log(sum);
      for (int64_t l = 0; l < s.length; ++l) {
        A v = log_form ? (value(l) - mx) - log_sum : e[l] / sum;
        y.values[s.at(o, l, r)] = to_output(y.dtype, v);
      }
    }
}

template <typename A>
void softmax_backward_as(const Call& c) {
  const bool log_form = std::string_view(c.op.name) == "log_softmax_backward";
  const auto &dy = c.in[0].values, &yv = c.in[1].values;
  HostTensor& dx = c.out[0];
  AxisSplit s = split_axis(c.in[0].shape, c.i(attr::kAxis));
  const int lanes = s.inner == 1 ? row_lanes(s.length) : 1;
  std::vector<A> g(static_cast<size_t>(s.length));
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t r = 0; r < s.inner; ++r) {
      for (int64_t l = 0; l < s.length; ++l) {
        size_t k = s.at(o, l, r);
        g[l] = log_form ? static_cast<A>(dy[k]) : static_cast<A>(dy[k]) * static_cast<A>(yv[k]);
      }
      A sum = row_sum<A>(s.length, lanes, [&](int64_t l) { return g[l]; });
      for (int64_t l = 0; l < s.length; ++l) {
        size_t k = s.at(o, l, r);
        A out = static_cast<A>(yv[k]);
        A v = log_form ? g[l] - cuda_exp(out) * sum : g[l] - out * sum;
        dx.values[k] = to_output(dx.dtype, v);
      }
    }
}

}  // namespace

void softmax(const Call& c) {
  if (c.compute_dtype() == DType::kF64)
    softmax_as<double>(c);
  else
    softmax_as<float>(c);
}

void softmax_backward(const Call& c) {
  if (c.compute_dtype() == DType::kF64)
    softmax_backward_as<double>(c);
  else
    softmax_backward_as<float>(c);
}

}  // namespace polychip::reference::emulation
