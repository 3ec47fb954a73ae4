// Oracle embedding lookup and its gradient (exact sums of repeated ids).
#include "precision/oracle/exact_sum.hpp"
#include "precision/oracle/oracle_ops.hpp"

namespace polychip::precision::oracle_detail {

void embedding(const Call& c) {
  const auto &ids = c.in[0].values, &weight = c.in[1].values;
  auto& out = c.out[0].values;
  const int64_t vocab = c.in[1].shape[0], d = c.in[1].shape[1];
  for (size_t n = 0; n < ids.size(); ++n) {
    int64_t id = host_index(c.op, "ids", ids[n], static_cast<int64_t>(n), vocab);
    for (int64_t j = 0; j < d; ++j) out[n * d + j] = weight[id * d + j];
  }
}

void embedding_backward(const Call& c) {
  const auto &ids = c.in[0].values, &dout = c.in[1].values;
  auto& dweight = c.out[0].values;
  const int64_t vocab = c.out[0].shape[0], d = c.out[0].shape[1];
  std::vector<ExactSum> acc(static_cast<size_t>(vocab * d));
  for (size_t n = 0; n < ids.size(); ++n) {
    int64_t id = host_index(c.op, "ids", ids[n], static_cast<int64_t>(n), vocab);
    for (int64_t j = 0; j < d; ++j) acc[id * d + j].add(dout[n * d + j]);
  }
  for (size_t k = 0; k < acc.size(); ++k) dweight[k] = static_cast<double>(acc[k].value());
}

}  // namespace polychip::precision::oracle_detail
