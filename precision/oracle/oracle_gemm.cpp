// Oracle gemm: y = alpha op(a) op(b) + beta c with long double dot products
// (products of f32/f16/bf16 values are exact in long double; the 64-bit
// sum keeps the result exact at float64 precision for any K used here).
// The math mode only licenses device shortcuts; the oracle is always exact.
#include "precision/oracle/oracle_ops.hpp"

namespace polychip::precision::oracle_detail {

void gemm(const Call& c) {
  const HostTensor &a = c.in[0], &b = c.in[1], &cc = c.in[2];
  HostTensor& y = c.out[0];
  const int o = static_cast<int>(a.shape.size()) - 2;
  const bool ta = c.i(attr::kTransA) != 0, tb = c.i(attr::kTransB) != 0;
  const int64_t batch = o ? a.shape[0] : 1;
  const int64_t m = y.shape[o], n = y.shape[o + 1];
  const int64_t k_len = ta ? a.shape[o] : a.shape[o + 1];
  const long double alpha = c.f(attr::kAlpha), beta = c.f(attr::kBeta);
  // Element strides of op(a)[i, k] and op(b)[k, j] inside one batch.
  const int64_t a_i = ta ? 1 : k_len, a_k = ta ? m : 1;
  const int64_t b_k = tb ? 1 : n, b_j = tb ? k_len : 1;
  std::vector<long double> row(static_cast<size_t>(k_len));
  std::vector<double> cols(static_cast<size_t>(n * k_len));  // op(b) column j at j * K
  for (int64_t p = 0; p < batch; ++p) {
    const double* ap = a.values.data() + p * m * k_len;
    const double* bp = b.values.data() + p * k_len * n;
    const double* cp = cc.values.data() + p * m * n;
    double* yp = y.values.data() + p * m * n;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < k_len; ++k) cols[j * k_len + k] = bp[k * b_k + j * b_j];
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t k = 0; k < k_len; ++k) row[k] = ap[i * a_i + k * a_k];
      auto store = [&](int64_t j, long double acc) {
        long double v = alpha * acc;
        if (beta != 0) v += beta * static_cast<long double>(cp[i * n + j]);
        yp[i * n + j] = static_cast<double>(v);
      };
      int64_t j = 0;
      for (; j + 4 <= n; j += 4) {  // four columns at a time: independent sums, faster
        const double* c0 = cols.data() + j * k_len;
        long double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (int64_t k = 0; k < k_len; ++k) {
          s0 += row[k] * c0[k];
          s1 += row[k] * c0[k + k_len];
          s2 += row[k] * c0[k + 2 * k_len];
          s3 += row[k] * c0[k + 3 * k_len];
        }
        store(j, s0), store(j + 1, s1), store(j + 2, s2), store(j + 3, s3);
      }
      for (; j < n; ++j) {
        const double* col = cols.data() + j * k_len;
        long double acc = 0;
        for (int64_t k = 0; k < k_len; ++k) acc += row[k] * col[k];
        store(j, acc);
      }
    }
  }
}

}  // namespace polychip::precision::oracle_detail
