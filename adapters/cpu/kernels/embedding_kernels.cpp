// embedding forward (row gather) and backward (deterministic scatter-add:
// rows accumulated in double in order of n, rounded once). Ids are checked
// before any output is written.
#include <algorithm>
#include <cstring>
#include <vector>

#include "element_types.hpp"
#include "index_dispatch.hpp"
#include "kernel_registry.hpp"

namespace polychip::cpu {
namespace {

// Both ops read ids c[0] [N], each in [0, V), beside floating c[1].
template <class Body>
polychip_status visit_float_and_ids(const KernelCall& c, int64_t n, int64_t vocab, Body&& body) {
  return visit_float_with_checked_indices(c, 1, 0, "ids", n, vocab, "vocabulary V", body);
}

// ids, weight [V, D] -> out [N, D].
polychip_status embedding(const KernelCall& c) {
  const int64_t n = c[0].shape[0], vocab = c[1].shape[0], d = c[1].shape[1];
  return visit_float_and_ids(c, n, vocab, [&](auto s, const auto* ids) {
    using S = decltype(s);
    for (int64_t r = 0; r < n; ++r)
      if (d > 0)
        std::memcpy(c[2].as<S>() + r * d, c[1].as<S>() + static_cast<int64_t>(ids[r]) * d,
                    sizeof(S) * d);
  });
}

// ids, dout [N, D] -> dweight [V, D].
polychip_status embedding_backward(const KernelCall& c) {
  const int64_t n = c[0].shape[0], vocab = c[2].shape[0], d = c[2].shape[1];
  return visit_float_and_ids(c, n, vocab, [&](auto s, const auto* ids) {
    using S = decltype(s);
    // Accumulators for the touched rows only (vocabularies are large).
    std::vector<int64_t> slot(static_cast<size_t>(vocab), -1);
    std::vector<int64_t> touched;
    for (int64_t r = 0; r < n; ++r) {
      const int64_t id = static_cast<int64_t>(ids[r]);
      if (slot[id] < 0) {
        slot[id] = static_cast<int64_t>(touched.size());
        touched.push_back(id);
      }
    }
    std::vector<double> acc(touched.size() * d, 0.0);
    for (int64_t r = 0; r < n; ++r) {
      double* a = acc.data() + slot[static_cast<int64_t>(ids[r])] * d;
      const S* g = c[1].as<S>() + r * d;
      for (int64_t j = 0; j < d; ++j) a[j] += to_f64(g[j]);
    }
    S* dw = c[2].as<S>();
    const S zero = from_f64<S>(0.0);
    std::fill(dw, dw + vocab * d, zero);
    for (size_t t = 0; t < touched.size(); ++t)
      for (int64_t j = 0; j < d; ++j) dw[touched[t] * d + j] = from_f64<S>(acc[t * d + j]);
  });
}

const NamedKernel kKernels[] = {
    {"embedding", embedding},
    {"embedding_backward", embedding_backward},
};

}  // namespace

std::span<const NamedKernel> embedding_kernels() { return kKernels; }

}  // namespace polychip::cpu
