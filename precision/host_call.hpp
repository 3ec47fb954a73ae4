// HostCall: one op call as the per-family kernels of the float64 oracle
// (precision/oracle) and of the NVIDIA emulation (reference/) read it.
// Argument reading only: each side keeps its own arithmetic.
#pragma once

#include <cstdint>
#include <span>

#include "precision/host_tensor.hpp"

namespace polychip::precision {

struct HostCall {
  const OpSpec& op;
  std::span<const HostTensor> in;
  std::span<HostTensor> out;
  const polychip_op_attrs& attrs;
  int64_t i(int slot) const { return attrs.ints[slot]; }
  double f(int slot) const { return attrs.floats[slot]; }
};

}  // namespace polychip::precision
