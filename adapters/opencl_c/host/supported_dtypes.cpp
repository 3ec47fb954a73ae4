#include "host/supported_dtypes.hpp"

#include <initializer_list>

#include "polychip/adapter_abi.h"

namespace polychip::opencl_family {

uint64_t supported_dtypes(bool has_fp64) {
  uint64_t dtypes = 0;
  for (int d : {POLYCHIP_DTYPE_F32, POLYCHIP_DTYPE_F16, POLYCHIP_DTYPE_BF16, POLYCHIP_DTYPE_I32,
                POLYCHIP_DTYPE_I64})
    dtypes |= uint64_t{1} << d;
  // f64 compute and the f8 formats (cast goes through double) need fp64.
  if (has_fp64)
    for (int d : {POLYCHIP_DTYPE_F64, POLYCHIP_DTYPE_F8E4M3, POLYCHIP_DTYPE_F8E5M2})
      dtypes |= uint64_t{1} << d;
  return dtypes;
}

}  // namespace polychip::opencl_family
