#include "tensor_desc.hpp"

namespace polychip::gpu {

int64_t element_count(const polychip_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

bool is_row_major(const polychip_tensor& t) {
  int64_t expect = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

pc_tensor_desc make_tensor_desc(const polychip_tensor& t, uint64_t address) {
  pc_tensor_desc d{};
  d.address = address;
  if (t.rank == 0) {
    d.rank = kMinDescRank;
    d.shape[0] = 1;
    d.strides[0] = 1;
    d.contiguous = 1;
    return d;
  }
  d.rank = t.rank;
  for (int k = 0; k < t.rank; ++k) {
    d.shape[k] = t.shape[k];
    d.strides[k] = t.strides[k];
  }
  d.contiguous = is_row_major(t) ? 1 : 0;
  return d;
}

}  // namespace polychip::gpu
