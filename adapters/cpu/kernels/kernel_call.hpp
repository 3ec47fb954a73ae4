// What a kernel implementation receives: the tensor views in op-contract
// order (inputs, then outputs), the attributes and the device's numerics.
#pragma once

#include <span>

#include "numerics.hpp"
#include "tensor_view.hpp"

namespace polychip::cpu {

struct KernelCall {
  const char* op;
  std::span<const TensorView> tensors;
  const polychip_op_attrs* attrs;
  const Numerics* numerics;

  const TensorView& operator[](size_t k) const { return tensors[k]; }
  int64_t i(int slot) const { return attrs->ints[slot]; }
  double f(int slot) const { return attrs->floats[slot]; }
};

using KernelImpl = polychip_status (*)(const KernelCall& call);

}  // namespace polychip::cpu
