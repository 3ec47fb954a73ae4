// Emulated reductions along an axis. A contiguous axis (inner == 1) is
// reduced like PyTorch's reduce kernel with one block per output: the block
// reduction order of reduction_order.hpp with 256 threads. A strided axis
// (inner > 1) is reduced by one thread per output walking the axis in order
// (the "reduce along a non-fastest dimension" configuration).
// sum: acc + x; mean: sum * (1/L) with 1/L rounded (PyTorch's MeanOps
// factor); l2_norm: fma(x, x, acc) then sqrt; max/argmax: exact (NaN wins).
#include <cmath>
#include <limits>
#include <string_view>

#include "reference/emulation_ops.hpp"
#include "reference/reduction_order.hpp"

namespace polychip::reference::emulation {
namespace {

template <typename A>
void reduce_as(const Call& c) {
  std::string_view op = c.op.name;
  const auto& x = c.in[0].values;
  HostTensor& y = c.out[0];
  AxisSplit s = split_axis(c.in[0].shape, c.i(attr::kAxis));
  const bool squares = op == "l2_norm";
  const int lanes = s.inner == 1 ? kBlockLanes : 1;
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t r = 0; r < s.inner; ++r) {
      double& out = y.values[o * s.inner + r];
      auto value = [&](int64_t l) { return static_cast<A>(x[s.at(o, l, r)]); };
      if (op == "reduce_max" || op == "argmax") {
        A best = -std::numeric_limits<A>::infinity();
        int64_t best_at = 0;
        for (int64_t l = 0; l < s.length; ++l) {
          A v = value(l);
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
        out = op == "argmax" ? static_cast<double>(best_at) : to_output(y.dtype, best);
        continue;
      }
      A sum = strided_tree_reduce<A>(
          s.length, lanes, A(0),
          [&](A acc, int64_t l) {
            return squares ? std::fma(value(l), value(l), acc) : acc + value(l);
          },
          [](A a, A b) { return a + b; });
      if (op == "reduce_mean") sum = sum * (A(1) / static_cast<A>(s.length));
      if (squares) sum = std::sqrt(sum);
      out = to_output(y.dtype, sum);
    }
}

}  // namespace

void reduction(const Call& c) {
  if (c.compute_dtype() == DType::kF64)
    reduce_as<double>(c);
  else
    reduce_as<float>(c);
}

}  // namespace polychip::reference::emulation
