// The op contract's checks of a kernel call, which both OpenCL-family
// adapters make before launching, so a direct ABI caller gets the same
// errors as the dispatcher's users instead of a wrong result.
#pragma once

#include "polychip/adapter_abi.h"
#include "polychip/op_contract.hpp"
#include "polychip/tensor_bounds.hpp"

namespace polychip::opencl_family {

// The contract's spec of `op`; NOT_FOUND when the contract has no such op.
const OpSpec& require_contract_op(const char* op);

// The call's tensors and attributes against `spec` (validate_call), and
// every tensor within its memory (`memory_size` gives a memory's size);
// INVALID_ARGUMENT with the contract's reason otherwise. The tensor list
// must be checked first (non-negative count, non-null when non-empty).
void check_contract_call(const OpSpec& spec, const polychip_kernel_args& args,
                         MemorySizeFn memory_size);

}  // namespace polychip::opencl_family
