// The mixed pool of `certify --suite training`: the devices given to
// --adapters train the reference's workload together, one data-parallel rank
// each (`polychip train --np N --dp-profile`: the even split, each rank's
// rows in one pass, the sharded optimizer), so that the pool's loss curve
// can be judged like one device's. The split is not the planner's: a
// verdict must not depend on a timing, and a split chosen from measured
// speeds would change which kernel paths run (sim.drift's drifting GEMM
// needs a rank's pass to hold 256 tokens); the planner's split, its
// prediction for the even one, eta and gain are recorded beside it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace polychip::training {

struct PoolTrainingRequest {
  std::string polychip;              // the executable to run `train` with
  std::vector<std::string> devices;  // one rank each, in rank order
  std::string preset, precision;
  int64_t steps = 0;
};

struct PoolTrainingRun {
  int exit_code = 0;
  std::string output;                   // the job's stdout and stderr, for a failure's message
  std::string command;                  // as a person would type it
  std::vector<double> loss, grad_norm;  // per step; empty unless exit_code is 0
  std::vector<int64_t> rows_per_rank;
  double seconds = 0;
  // The planner's report (train_run.hpp kDataParallelReport): the predicted
  // and measured step time, eta and gain.
  double predicted_step_seconds = 0, measured_step_seconds = 0, eta = 0, gain = 0;
  std::string planner_split;  // what --dp-split auto would have taken
};

// Runs the job in a scratch folder (removed after) and reads its curve back.
// Throws INTERNAL when it cannot be started or its run folder cannot be read.
PoolTrainingRun train_pool(const PoolTrainingRequest& request);

}  // namespace polychip::training
