#include "host/tensor_elements.hpp"

namespace polychip::opencl_family {

int64_t numel(const polychip_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

}  // namespace polychip::opencl_family
