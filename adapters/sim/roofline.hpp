// Modelled-speed chips: sim devices whose kernels take at least a roofline
// time, max(FLOPs / peak, bytes / bandwidth) plus a launch latency, waiting
// out the rest asleep (no core used). Every device here shares the same
// cores, so only a modelled speed lets a pool of unequal chips (70:58, 3:1,
// 10:1) be run and measured on one machine (docs/sim-profiles.md).
#pragma once

#include <string>
#include <vector>

#include "kernel_call.hpp"

namespace polychip::sim {

struct Roofline {
  double gflops = 0;     // peak GFLOP/s
  double gbytes_s = 0;   // memory bandwidth, GB/s
  double launch_us = 0;  // added to every kernel
};

// A chip named in POLYCHIP_SIM_MODELLED: device type "sim.modelled-<name>".
struct ModelledChip {
  std::string name;
  Roofline roofline;
};

struct ModelledChips {
  std::vector<ModelledChip> chips;
  std::string error;  // a malformed variable, naming it
};

// "fast=8:4,slow=2:1:20": name=GFLOP/s:GB/s[:launch µs], names of
// lower-case letters, digits and '_' (each once, at most 40), finite
// numbers, peak and bandwidth > 0, latency >= 0.
ModelledChips parse_modelled_chips(const char* text);

// The work one kernel call does, as the roofline counts it: gemm 2·B·M·N·K
// FLOPs, attention 4·B·H·S²·D (its backward 10·B·H·S²·D), every other op one
// FLOP per element of its largest tensor; bytes: every tensor's elements
// read or written once.
struct KernelWork {
  double flops = 0;
  double bytes = 0;
};
KernelWork kernel_work(const cpu::KernelCall& call);

// The least time the modelled chip takes for `work`, in seconds.
double roofline_seconds(const Roofline& roofline, const KernelWork& work);

}  // namespace polychip::sim
