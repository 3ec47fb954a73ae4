// `polychip train`: runs the standard workload on one device, prints a
// progress line per step and writes the run directory (checkpoint.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace polychip::training {

struct TrainRunOptions {
  // "cpu", "sim.faithful", "opencl:0", ...; data parallel: a comma-separated
  // list, rank r uses entry r % size.
  std::string device = "cpu";
  std::string preset = "default";
  int64_t steps = 100;  // total steps of the run (a resumed run continues to it)
  std::string out_dir;
  bool resume = false;           // continue from the checkpoint in out_dir
  int64_t checkpoint_every = 0;  // also write the directory every K steps; 0: at the end only
  std::optional<double> learning_rate;
  std::optional<uint64_t> seed;
  std::string precision = "fp32";  // or "bf16" (TrainConfig::precision)
  // Also write the run's reference trace (reference_trace.hpp) here; a fresh
  // run of the preset's workload only (no --resume, --lr or --seed).
  std::string record_reference;
  // Data parallelism (data_parallel.hpp): spawn this many local ranks. Under
  // a launcher of several ranks (mpirun, srun, torchrun) every process is a
  // rank without it. Rank 0 prints and writes out_dir.
  std::optional<int> np;
  // "shard": one AdamW sharded over the ranks (sharded_optimizer.hpp);
  // "check": AdamW on every rank, ranks whose weights differ after a step
  // end the job; "sync": they take rank 0's (data_parallel.hpp, WeightPolicy).
  std::string dp_weights = "shard";
  // Rows of the global batch per rank, by ranks in order ("6:2",
  // data_parallel.hpp parse_split); empty: an even split; "auto": the split
  // planner's (split_planner.hpp), in micro-batches of micro_batch rows (1
  // when 0).
  std::string dp_split;
  // Print the planner's split and its prediction, then stop (no training).
  bool plan = false;
  // Measure the profile and report the prediction for this run's split
  // (--dp-split or even) against the measured step time, without changing it.
  bool dp_profile = false;
  // Overlap the gradient reduction with the backward pass
  // (Trainer::overlap_gradient_reduction).
  bool dp_overlap = false;
  // Rows per forward/backward pass (gradient accumulation over the rest);
  // 0: a rank's share, or the batch, in one pass.
  int64_t micro_batch = 0;
  // Pipeline parallelism: the model's blocks per stage, by stages in order
  // ("3:1", pipeline_schedule.hpp); the ranks form pipelines of that many
  // consecutive ranks, and --dp-split splits the batch over the pipelines.
  // Empty: none.
  std::string pp_layers;
};

// A data-parallel run that measured a profile (--dp-split auto, --dp-profile)
// reports its prediction against the measured step time, and writes it
// with the split to <out>/data_parallel.json (kDataParallelReport).
inline constexpr const char* kDataParallelReport = "data_parallel.json";

// Exit code: 0 done, 2 a bad option or device (message on `errors`), 3 when
// the run failed: a step's loss or gradient norm was not finite (training
// diverged); a data-parallel rank also when a peer died or the ranks'
// weights diverged, its message starting with "rank N:"; --np: the first
// failed rank's code.
int run_training(const TrainRunOptions& options, std::ostream& progress, std::ostream& errors);

}  // namespace polychip::training
