#include "sim_profiles.hpp"

#include "drift_kernels.hpp"
#include "f16_row_precision.hpp"

#include <cstdlib>
#include <deque>
#include <mutex>
#include <sstream>
#include <vector>

namespace polychip::sim {
namespace {

cpu::Numerics with(bool cpu::Numerics::*flag) {
  cpu::Numerics n;
  n.*flag = true;
  return n;
}

const SimProfile kProfiles[] = {
    {.device_type = "sim.faithful",
     .defect = "",
     .numerics = cpu::Numerics{},
     .role = ProfileRole::kFaithful},
    {"sim.bf16acc", "gemm accumulates in bf16 (every partial sum rounded to bf16)",
     with(&cpu::Numerics::gemm_bf16_accumulation)},
    {"sim.ftz", "exp/log flush subnormals to zero and keep only 12 fraction bits",
     with(&cpu::Numerics::ftz_fast_exp_log)},
    {"sim.naive_softmax", "softmax/log_softmax skip the max subtraction (overflow)",
     with(&cpu::Numerics::softmax_without_max)},
    {"sim.poor_variance", "layernorm variance as E[x^2] - E[x]^2 in one f32 pass",
     with(&cpu::Numerics::one_pass_f32_variance)},
    {"sim.write_past_end", "silu_backward writes one element of zeros past its output",
     cpu::Numerics{}, KernelDefect::kWritePastEnd, "silu_backward"},
    {"sim.nondeterministic", "reduce_sum is one ulp off at element 0 on every other call",
     cpu::Numerics{}, KernelDefect::kNondeterministic, "reduce_sum"},
    {"sim.vector_tail", "tanh drops the last element of a 63-element tail (64-wide loop)",
     cpu::Numerics{}, KernelDefect::kVectorTailDropped, "tanh"},
    {"sim.long_row", "softmax rows longer than 4,096 sum in f16", cpu::Numerics{},
     KernelDefect::kLongRowLowPrecision, "softmax"},
    {"sim.ignored_eps", "rmsnorm ignores its eps attribute (uses 1e-5)", cpu::Numerics{},
     KernelDefect::kIgnoredEps, "rmsnorm"},
    {"sim.lost_updates", "embedding_backward keeps the last row of repeated ids, not the sum",
     cpu::Numerics{}, KernelDefect::kLostUpdates, "embedding_backward"},
    {"sim.broadcast_as_contiguous", "mul reads a broadcast (stride 0) operand as contiguous",
     cpu::Numerics{}, KernelDefect::kBroadcastAsContiguous, "mul"},
    {"sim.strides_ignored", "gelu reads a non-contiguous input as contiguous", cpu::Numerics{},
     KernelDefect::kStridesIgnored, "gelu"},
    {"sim.copy_tail",
     "device-to-host copies over 4 KiB that are not a multiple of 4 KiB corrupt their last byte",
     cpu::Numerics{}, KernelDefect::kNone, "", CopyDefect::kPartialPageTail},
    // Appended after the defective profiles so their sim:N indices stay.
    {.device_type = "sim.nvidia_emu",
     .defect = "",
     .numerics = cpu::Numerics{},
     .engine = KernelEngine::kNvidiaEmulation,
     .role = ProfileRole::kReference},
    {.device_type = "sim.drift",
     .defect = kDriftDescription,
     .numerics = cpu::Numerics{},
     .engine = KernelEngine::kCpuKernelsDriftingGemm,
     .role = ProfileRole::kDrifting},
    {"sim.copy_head",
     "host-to-device copies to a destination off a 64-byte line zero the line's bytes before it",
     cpu::Numerics{}, KernelDefect::kNone, "", CopyDefect::kUnalignedHeadLine},
    {"sim.f16_rows",
     "f32 row ops (sums, softmax family, norms, cross-entropy, and their backward ops) "
     "computed at f16 precision: inputs and outputs rounded to 11 significant bits",
     cpu::Numerics{}, KernelDefect::kF16RowPrecision, ""},
};

}  // namespace

const ModelledChips& modelled_chips() {
  static const ModelledChips chips = parse_modelled_chips(std::getenv("POLYCHIP_SIM_MODELLED"));
  return chips;
}

std::span<const SimProfile> sim_profiles() {
  static const std::vector<SimProfile> profiles = [] {
    std::vector<SimProfile> all(std::begin(kProfiles), std::end(kProfiles));
    static std::deque<std::string> device_types;  // the profiles point into it
    for (const ModelledChip& chip : modelled_chips().chips) {
      device_types.push_back("sim.modelled-" + chip.name);
      all.push_back({.device_type = device_types.back().c_str(),
                     .defect = "",
                     .numerics = cpu::Numerics{},
                     .role = ProfileRole::kFaithful,
                     .roofline = chip.roofline});
    }
    return all;
  }();
  return profiles;
}

bool kernel_defect_touches(const SimProfile& profile, std::string_view op) {
  if (profile.kernel_defect == KernelDefect::kF16RowPrecision) return is_f16_precision_row_op(op);
  return profile.kernel_defect != KernelDefect::kNone && op == profile.defect_op;
}

double parse_speed(const std::string& text, const std::string& device_type, std::string& error) {
  auto parse_number = [&](const std::string& s) {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !(v > 0 && v <= 1)) {
      error = "POLYCHIP_SIM_SPEED: '" + s + "' is not a speed in (0, 1]";
      return 1.0;
    }
    return v;
  };
  if (text.empty()) return 1.0;
  if (text.find('=') == std::string::npos) return parse_number(text);
  double speed = 1.0;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      error = "POLYCHIP_SIM_SPEED: '" + item + "' is not device_type=speed";
      return 1.0;
    }
    if (item.substr(0, eq) == device_type) speed = parse_number(item.substr(eq + 1));
    if (!error.empty()) return 1.0;
  }
  return speed;
}

SimConfig parse_sim_config(const char* memory_mb, const char* speed) {
  SimConfig c;
  c.devices.resize(sim_profiles().size());
  uint64_t bytes = SimSettings{}.memory_bytes;
  if (memory_mb) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(memory_mb, &end, 10);
    if (!*memory_mb || *end != '\0' || v == 0 || v >= (1ull << 24))
      c.error = std::string("POLYCHIP_SIM_MEMORY_MB: '") + memory_mb +
                "' is not a size in MiB between 1 and 2^24 - 1";
    else
      bytes = v << 20;
  }
  for (size_t d = 0; d < c.devices.size() && c.error.empty(); ++d) {
    c.devices[d].memory_bytes = bytes;
    if (speed) c.devices[d].speed = parse_speed(speed, sim_profiles()[d].device_type, c.error);
  }
  return c;
}

const SimConfig& sim_config() {
  static const SimConfig config = [] {
    SimConfig c =
        parse_sim_config(std::getenv("POLYCHIP_SIM_MEMORY_MB"), std::getenv("POLYCHIP_SIM_SPEED"));
    if (c.error.empty()) c.error = modelled_chips().error;
    return c;
  }();
  return config;
}

}  // namespace polychip::sim
