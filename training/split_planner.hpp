// The split planner: the cost model of a data-parallel step over devices of
// unequal speed, and the profile it reads.
//
// A step of rank r runs passes_r forward/backward passes of one micro-batch
// (pass_seconds[r] each, gradient accumulation included), then the update
// every rank takes part in: the loss all-reduce, the sharded optimizer's
// reduce-scatter, norm, AdamW on the shard and all-gather, and the weight
// check (update_seconds, the slowest rank's). The step takes
//   max_r(passes_r * pass_seconds[r]) + update_seconds,
// and the planner gives each rank at least one pass and every further pass
// to the rank that would finish it first (optimal for equal passes).
// Tokens/s of device r alone is its compute only, tokens / (passes *
// pass_seconds[r]) for the whole batch: an upper bound, so η (the pool's
// tokens/s over the sum of the devices') is never flattered.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpt2_config.hpp"
#include "hal_ops.hpp"
#include "polychip/comm/communicator.hpp"

namespace polychip::training {

struct StepProfile {
  std::vector<double> pass_seconds;  // per rank, one micro-batch's pass
  double update_seconds = 0;         // the update after the passes, every rank together
};

struct SplitPlan {
  std::vector<int64_t> rows;            // per rank, as --dp-split takes them
  std::vector<double> compute_seconds;  // per rank: its passes
  double update_seconds = 0;
  double predicted_step_seconds = 0;
  int bottleneck_rank = 0;                       // the rank whose passes end last
  double pool_tokens_per_second = 0;             // predicted
  std::vector<double> device_tokens_per_second;  // each device alone (compute only)
  double eta = 0;                                // pool / sum of devices
  double gain = 0;                               // pool / fastest device
};

// The cost model of `rows` (a split of whole micro-batches of micro_rows
// rows; seq_len tokens a row). Throws INVALID_ARGUMENT when the sizes do not
// fit.
SplitPlan predict_split(const StepProfile& profile, const std::vector<int64_t>& rows,
                        int64_t micro_rows, int64_t seq_len);

// The split of global_rows (whole micro-batches of micro_rows) that the
// cost model predicts fastest, every rank at least one micro-batch.
SplitPlan plan_split(const StepProfile& profile, int64_t global_rows, int64_t micro_rows,
                     int64_t seq_len);

// Measures the profile (a collective: every rank calls it): each rank times
// runs of four back-to-back passes of one micro-batch of micro_rows on its
// own device, then the ranks time the update together; the medians of
// `repeats` samples are all-gathered, so every rank holds the same profile
// and plans the same split.
StepProfile measure_step_profile(comm::Communicator& comm, HalOps& ops, const TrainConfig& config,
                                 int64_t micro_rows, int repeats = 3);

// "plan: rows 6:2 ..., predicted 0.41 s a step; bottleneck rank 1 (...)".
std::string describe_plan(const SplitPlan& plan, const std::vector<std::string>& device_types);

}  // namespace polychip::training
