// The simulated chips: one device per profile, each a device type whose
// numerics are the cpu kernels with at most one deliberate defect (or a
// drift: sim.drift), or the NVIDIA emulation of reference/ (sim.nvidia_emu)
// (docs/sim-profiles.md), plus its memory size and speed factor.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "numerics.hpp"
#include "roofline.hpp"
#include "sim_defects.hpp"

namespace polychip::sim {

// What runs a profile's kernels.
enum class KernelEngine {
  kCpuKernels,              // the cpu adapter's kernels with `numerics`
  kNvidiaEmulation,         // reference/'s nvidia_reference_run (emulated_kernel.hpp)
  kCpuKernelsDriftingGemm,  // the cpu kernels, but drift_kernels.hpp's weight-gradient gemm
};

// What the conformance suites must conclude about a profile.
enum class ProfileRole {
  kFaithful,   // passes everything
  kDefective,  // fails the precision suite's quick level on its defect's ops
  kReference,  // the NVIDIA reference itself: passes everything
  kDrifting,   // passes the precision suite, fails the training suite
};

struct SimProfile {
  const char* device_type;  // "sim.faithful", ...
  const char* defect;       // one line, "" for none
  cpu::Numerics numerics;
  // A defect in how one op's kernel handles memory or arguments.
  KernelDefect kernel_defect = KernelDefect::kNone;
  const char* defect_op = "";  // the op it breaks (kF16RowPrecision: the row ops)
  CopyDefect copy_defect = CopyDefect::kNone;
  KernelEngine engine = KernelEngine::kCpuKernels;
  ProfileRole role = ProfileRole::kDefective;
  // A modelled-speed chip's (roofline.hpp); gflops 0 for the others.
  Roofline roofline = {};

  bool modelled() const { return roofline.gflops > 0; }
};

// In device-index order: the built-in profiles, then one faithful
// modelled-speed chip per entry of POLYCHIP_SIM_MODELLED.
std::span<const SimProfile> sim_profiles();

// POLYCHIP_SIM_MODELLED, read once (roofline.hpp).
const ModelledChips& modelled_chips();

// Whether `op` runs through the profile's kernel defect.
bool kernel_defect_touches(const SimProfile& profile, std::string_view op);

// Per-device settings read once from the environment:
//  POLYCHIP_SIM_MEMORY_MB  device memory of every sim device (default 1024);
//  POLYCHIP_SIM_SPEED      "0.5" for all devices, or "sim.bf16acc=0.25,..."
//                          per device type; a device at speed s takes 1/s
//                          of the cpu's kernel time (s in (0, 1]);
//  POLYCHIP_SIM_MODELLED   the modelled-speed chips (roofline.hpp).
struct SimSettings {
  uint64_t memory_bytes = 1024ull << 20;
  double speed = 1.0;
};
struct SimConfig {
  std::vector<SimSettings> devices;  // one per profile
  std::string error;  // a malformed variable: the adapter then reports 0 devices and this
};
const SimConfig& sim_config();
SimConfig parse_sim_config(const char* memory_mb, const char* speed);

// Parses a POLYCHIP_SIM_SPEED value for `device_type`; `error` is set (and
// 1.0 returned) when the text is malformed or a speed is outside (0, 1].
double parse_speed(const std::string& text, const std::string& device_type, std::string& error);

}  // namespace polychip::sim
