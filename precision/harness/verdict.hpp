// Verdicts of a case, wider than pass/fail (after dEQP / Vulkan CTS).
#pragma once

#include <string_view>

namespace polychip::precision {

enum class Verdict {
  kPass,
  kQualityWarning,  // within tolerance, but clearly worse than NVIDIA's error
  kMistrusted,      // within tolerance, but the case cannot tell (benchdnn's MISTRUSTED):
                    // its exact outputs are mostly one value, so a kernel writing a
                    // constant would pass too; not a failure of the device
  kNotSupported,    // the device declares the dtype unsupported / has no kernel
  kWaived,          // failed, covered by a waiver or an expected failure
  kFail,
  kCrash,    // the worker process died during the case
  kTimeout,  // the case did not finish within the time limit
};

inline constexpr Verdict kAllVerdicts[] = {
    Verdict::kPass,   Verdict::kQualityWarning, Verdict::kMistrusted, Verdict::kNotSupported,
    Verdict::kWaived, Verdict::kFail,           Verdict::kCrash,      Verdict::kTimeout};

// "Pass", "QualityWarning", "Mistrusted", "NotSupported", "Waived", "Fail", "Crash", "Timeout".
std::string_view verdict_name(Verdict v);
// Throws Error(INVALID_ARGUMENT) for an unknown name.
Verdict parse_verdict(std::string_view name);
// Fail, Crash and Timeout make an adapter's certification fail.
bool is_failure(Verdict v);

}  // namespace polychip::precision
