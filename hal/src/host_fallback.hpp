// Host fallback: runs an op a device lacks on the cpu adapter. Each distinct
// device memory the call touches is staged once (so in-place aliases stay
// aliases): copy in, run the cpu kernel, copy the outputs' memories back.
#pragma once

#include <span>

#include "polychip/device.hpp"
#include "polychip/memory.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/tensor.hpp"

namespace polychip {

void run_on_host(const Device& cpu, polychip_kernel_fn cpu_kernel, const OpSpec& op,
                 std::span<const TensorView> tensors, const polychip_op_attrs& attrs,
                 const Stream& device_stream);

}  // namespace polychip
