// sim.drift: the NVIDIA emulation with small departures that each stay
// inside the precision suite's quick tolerances but add up over training
// (docs/sim-profiles.md, "sim.drift").
#pragma once

#include <span>

#include "precision/host_tensor.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::sim {

inline constexpr const char* kDriftDescription =
    "NVIDIA numerics, but weight-gradient gemms accumulate with partial sums truncated";

// A HostOpFn: nvidia_reference_run except for the drifting ops.
void drifting_run(const OpSpec& op, std::span<const precision::HostTensor> inputs,
                  std::span<precision::HostTensor> outputs, const polychip_op_attrs& attrs);

}  // namespace polychip::sim
