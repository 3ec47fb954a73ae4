// The kernels of sim.nvidia_emu: every op runs the NVIDIA emulation of
// reference/ (nvidia_reference_run) on the device memory seen as host
// tensors, so the training workload and the precision suite run "on an
// NVIDIA GPU" here (docs/sim-profiles.md). Any layout the dispatcher gives
// is read element by element through its strides (broadcast, permuted,
// gapped views), and every input is read before any output is written, so
// in-place calls see their inputs unchanged.
#pragma once

#include <functional>
#include <span>

#include "kernel_call.hpp"
#include "polychip/op_contract.hpp"
#include "precision/host_tensor.hpp"

namespace polychip::sim {

// sim.nvidia_emu's device name, which results files record.
inline constexpr const char* kNvidiaEmulationDeviceName =
    "NVIDIA GPU numerics, emulated (polychip reference/, docs/reference-numerics.md)";

// What computes an op on host tensors: nvidia_reference_run, or a drifting
// variant of it (drift_kernels.hpp).
using HostKernel =
    std::function<void(const OpSpec& op, std::span<const precision::HostTensor> in,
                       std::span<precision::HostTensor> out, const polychip_op_attrs& attrs)>;

// Gathers `call`'s inputs into host tensors, runs `kernel`, stores the
// outputs (already rounded to their dtypes) through their views. Errors
// become the status of the polychip::Error thrown, with its message as the
// kernel error.
polychip_status run_host_kernel(const cpu::KernelCall& call, const HostKernel& kernel);

// run_host_kernel with the NVIDIA emulation.
polychip_status run_emulated_kernel(const cpu::KernelCall& call);

}  // namespace polychip::sim
