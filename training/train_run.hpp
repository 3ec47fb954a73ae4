// `polychip train`: runs the standard workload on one device, prints a
// progress line per step and writes the run directory (checkpoint.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace polychip::training {

struct TrainRunOptions {
  std::string device = "cpu";  // "cpu", "sim.faithful", "opencl:0", ...
  std::string preset = "default";
  int64_t steps = 100;  // total steps of the run (a resumed run continues to it)
  std::string out_dir;
  bool resume = false;           // continue from the checkpoint in out_dir
  int64_t checkpoint_every = 0;  // also write the directory every K steps; 0: at the end only
  std::optional<double> learning_rate;
  std::optional<uint64_t> seed;
  // Also write the run's reference trace (reference_trace.hpp) here; a fresh
  // run of the preset's workload only (no --resume, --lr or --seed).
  std::string record_reference;
};

// Exit code: 0 done, 2 a bad option or device (message on `errors`).
int run_training(const TrainRunOptions& options, std::ostream& progress, std::ostream& errors);

}  // namespace polychip::training
