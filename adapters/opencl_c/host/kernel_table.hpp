// The kernel table of an OpenCL-family device, generated from the op
// contract: both adapters run the same kernel sources, so they list the
// same signatures and differ only in which ops they launch and whether the
// device has fp64.
#pragma once

#include <string_view>
#include <vector>

#include "polychip/adapter_abi.h"

namespace polychip::opencl_family {

// Whether the adapter has a launcher for `op`.
using HasLauncher = bool (*)(std::string_view op);

// Every op of the contract that `has_launcher` accepts, one entry per
// compute dtype (f64 only when has_fp64), plus `cast` for any pair of float
// dtypes when has_fp64 (it rounds through double). Every entry calls
// `entry`. Built on the first call for `device` and kept for the life of
// the process, since the ABI hands out pointers into it.
const std::vector<polychip_kernel_entry>& contract_kernel_table(const void* device, bool has_fp64,
                                                                HasLauncher has_launcher,
                                                                polychip_kernel_fn entry);

// The kernel_table call's answer: `entries`, which must outlive the
// process's use of the adapter (as contract_kernel_table's do).
void answer_kernel_table(const std::vector<polychip_kernel_entry>& entries,
                         polychip_kernel_table_args* args);

}  // namespace polychip::opencl_family
