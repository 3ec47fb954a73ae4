// Emulated embedding (a gather: exact), embedding backward (the contract's
// deterministic order: rows of dout added in order of n, accumulated in f32
// — f64 for f64 — and rounded once) and rotate-half rotary embedding in
// float: y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin (each product rounded,
// no FMA contraction modelled), rounded once to x's dtype.
#include "reference/emulation_ops.hpp"

namespace polychip::reference::emulation {
namespace {

template <typename A>
void embedding_backward_as(const Call& c) {
  const auto &ids = c.in[0].values, &dout = c.in[1].values;
  HostTensor& dweight = c.out[0];
  const int64_t vocab = dweight.shape[0], d = dweight.shape[1];
  std::vector<A> acc(static_cast<size_t>(vocab * d), A(0));
  for (size_t n = 0; n < ids.size(); ++n) {
    int64_t id = precision::host_index(c.op, "ids", ids[n], static_cast<int64_t>(n), vocab);
    for (int64_t j = 0; j < d; ++j) acc[id * d + j] += static_cast<A>(dout[n * d + j]);
  }
  for (size_t k = 0; k < acc.size(); ++k) dweight.values[k] = to_output(dweight.dtype, acc[k]);
}

template <typename A>
void rotary_as(const Call& c) {
  const auto &x = c.in[0].values, &cosv = c.in[1].values, &sinv = c.in[2].values;
  HostTensor& y = c.out[0];
  const int64_t s_len = c.in[0].shape[0], heads = c.in[0].shape[1], d = c.in[0].shape[2];
  const int64_t half = d / 2;
  const bool inverse = c.i(attr::kInverse) != 0;
  for (int64_t s = 0; s < s_len; ++s)
    for (int64_t h = 0; h < heads; ++h) {
      const size_t base = (s * heads + h) * d;
      for (int64_t i = 0; i < half; ++i) {
        A co = static_cast<A>(cosv[s * half + i]), si = static_cast<A>(sinv[s * half + i]);
        if (inverse) si = -si;
        A x1 = static_cast<A>(x[base + i]), x2 = static_cast<A>(x[base + i + half]);
        y.values[base + i] = to_output(y.dtype, x1 * co - x2 * si);
        y.values[base + i + half] = to_output(y.dtype, x2 * co + x1 * si);
      }
    }
}

}  // namespace

void embedding(const Call& c) {
  const auto &ids = c.in[0].values, &weight = c.in[1].values;
  HostTensor& out = c.out[0];
  const int64_t vocab = c.in[1].shape[0], d = c.in[1].shape[1];
  for (size_t n = 0; n < ids.size(); ++n) {
    int64_t id = precision::host_index(c.op, "ids", ids[n], static_cast<int64_t>(n), vocab);
    for (int64_t j = 0; j < d; ++j) out.values[n * d + j] = weight[id * d + j];
  }
}

void embedding_backward(const Call& c) {
  if (c.compute_dtype() == DType::kF64)
    embedding_backward_as<double>(c);
  else
    embedding_backward_as<float>(c);
}

void rotary_embedding(const Call& c) {
  if (c.compute_dtype() == DType::kF64)
    rotary_as<double>(c);
  else
    rotary_as<float>(c);
}

}  // namespace polychip::reference::emulation
