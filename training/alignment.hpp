// Alignment criteria: how close a run's loss curve must stay to a reference
// trace's (docs/training.md, "Alignment tiers"), and the step-0 diagnosis
// that says where a divergence starts.
//
//   exact         |a - b| <= 1e-5 at every step (same numerics: a run
//                 reproducing a trace recorded on the same device type)
//   cross-vendor  |a - b| <= atol + rtol * |ref| at every step but at most
//                 max(1, N / 100) of them (rtol 1e-2, atol 1e-3), and
//                 FlagPerf's aggregate: the mean relative error over the
//                 steps >= 21 below 2%
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace polychip::training {

struct AlignmentCriteria {
  std::string tier = "cross-vendor";  // or "exact"
  double exact_atol = 1e-5;
  double rtol = 1e-2, atol = 1e-3;
  int64_t mean_from_step = 21;      // FlagPerf: steps from here on
  double max_mean_relative = 0.02;  // FlagPerf: 2%
};
// "exact" or "cross-vendor"; INVALID_ARGUMENT for another name.
AlignmentCriteria alignment_criteria(const std::string& tier);

struct CurveComparison {
  bool pass = false;
  int64_t steps = 0;
  int64_t steps_outside = 0, allowed_outside = 0;
  int64_t first_outside_step = 0;  // 1-based; 0: none
  int64_t largest_step = 0;        // the step of the largest |a - b|
  double largest_abs = 0, largest_relative = 0;
  double mean_relative = 0;  // over steps >= mean_from_step (cross-vendor)
  std::string summary;       // one line: what passed or where it failed
};

// `run` must have as many steps as `reference` (else INVALID_ARGUMENT).
CurveComparison compare_loss_curves(const std::vector<double>& reference,
                                    const std::vector<double>& run,
                                    const AlignmentCriteria& criteria);

// Per parameter tensor, in forward order: |run - ref| <= atol + rtol * |ref|
// on the L2 norm of its step-1 gradient. Step 1 starts from the same weights
// and batch on every device, so only the ops' rounding separates two
// devices there (~1e-6 relative in fp32); a tensor off by more than 0.1%
// points at the op that computes its gradient.
struct Step1Diagnosis {
  bool pass = true;
  std::optional<std::string> first_out;  // the first tensor out of bounds
  std::string worst;                     // the tensor with the largest relative deviation
  double worst_relative = 0;
  std::string summary;
};
inline constexpr double kStep1GradRtol = 1e-3, kStep1GradAtol = 1e-7;
Step1Diagnosis diagnose_step1(const std::vector<std::pair<std::string, double>>& reference,
                              const std::vector<std::pair<std::string, double>>& run);

}  // namespace polychip::training
