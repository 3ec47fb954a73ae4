#include "split_planner.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "data_parallel.hpp"
#include "gpt2_model.hpp"
#include "gpt2_params.hpp"
#include "polychip/error.hpp"
#include "sharded_optimizer.hpp"

namespace polychip::training {
namespace {

using Clock = std::chrono::steady_clock;

// Passes timed together for one sample of the pass time.
constexpr int kPassesPerSample = 4;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

template <typename Work>
double median_seconds(int repeats, Work&& work) {
  std::vector<double> times;
  for (int k = 0; k < repeats; ++k) times.push_back(work());
  return median(std::move(times));
}

void check_profile(const StepProfile& profile, size_t ranks) {
  if (profile.pass_seconds.size() != ranks || ranks == 0)
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("split planner: a profile of {} ranks for a split of {}",
                            profile.pass_seconds.size(), ranks));
  for (double t : profile.pass_seconds)
    if (!(t > 0))
      throw Error(StatusCode::kInvalidArgument, "split planner: a pass time is not > 0");
}

}  // namespace

SplitPlan predict_split(const StepProfile& profile, const std::vector<int64_t>& rows,
                        int64_t micro_rows, int64_t seq_len) {
  check_profile(profile, rows.size());
  if (micro_rows < 1 || seq_len < 1)
    throw Error(StatusCode::kInvalidArgument, "split planner: micro-batch rows and seq_len >= 1");
  SplitPlan plan;
  plan.rows = rows;
  plan.update_seconds = profile.update_seconds;
  int64_t global_rows = 0;
  double slowest = -1;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r] < 1 || rows[r] % micro_rows != 0)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("split planner: rank {}'s {} rows are not whole micro-batches of {}",
                              r, rows[r], micro_rows));
    global_rows += rows[r];
    const double compute = static_cast<double>(rows[r] / micro_rows) * profile.pass_seconds[r];
    plan.compute_seconds.push_back(compute);
    if (compute > slowest) {
      slowest = compute;
      plan.bottleneck_rank = static_cast<int>(r);
    }
  }
  plan.predicted_step_seconds = slowest + profile.update_seconds;
  const double tokens = static_cast<double>(global_rows * seq_len);
  const double passes = static_cast<double>(global_rows / micro_rows);
  plan.pool_tokens_per_second = tokens / plan.predicted_step_seconds;
  double sum = 0, fastest = 0;
  for (double t : profile.pass_seconds) {
    const double alone = tokens / (passes * t);
    plan.device_tokens_per_second.push_back(alone);
    sum += alone;
    fastest = std::max(fastest, alone);
  }
  plan.eta = plan.pool_tokens_per_second / sum;
  plan.gain = plan.pool_tokens_per_second / fastest;
  return plan;
}

SplitPlan plan_split(const StepProfile& profile, int64_t global_rows, int64_t micro_rows,
                     int64_t seq_len) {
  const size_t ranks = profile.pass_seconds.size();
  check_profile(profile, ranks);
  if (micro_rows < 1 || global_rows % micro_rows != 0 ||
      global_rows / micro_rows < static_cast<int64_t>(ranks))
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("--dp-split auto: a global batch of {} rows is not {} or more whole "
                            "micro-batches of {} rows (one per rank at least)",
                            global_rows, ranks, micro_rows));
  std::vector<int64_t> passes(ranks, 1);
  for (int64_t left = global_rows / micro_rows - static_cast<int64_t>(ranks); left > 0; --left) {
    size_t best = 0;  // the rank that would finish one more pass first (ties: the lower rank)
    for (size_t r = 1; r < ranks; ++r)
      if (static_cast<double>(passes[r] + 1) * profile.pass_seconds[r] <
          static_cast<double>(passes[best] + 1) * profile.pass_seconds[best])
        best = r;
    ++passes[best];
  }
  std::vector<int64_t> rows;
  for (int64_t p : passes) rows.push_back(p * micro_rows);
  return predict_split(profile, rows, micro_rows, seq_len);
}

StepProfile measure_step_profile(comm::Communicator& comm, HalOps& ops, const TrainConfig& config,
                                 int64_t micro_rows, int repeats) {
  const Device& device = ops.stream().device();
  const bool mixed = config.precision == "bf16";
  Gpt2Model model(config.model, micro_rows, config.seq_len, mixed ? DType::kBF16 : DType::kF32,
                  ops);
  const std::vector<double> initial =
      gpt2_initial_params(model.layout(), config.model.num_layers, config.seed);
  model.set_params(initial);
  model.set_loss_positions(config.batch_size * config.seq_len);
  const int64_t total = model.layout().total();
  // What Trainer::forward_backward does for every micro-batch after the
  // first: the fp32 sum of the gradients (the cast first in bf16).
  Tensor accumulated(device, DType::kF32, {total});
  Tensor cast_grads = mixed ? Tensor(device, DType::kF32, {total}) : Tensor();
  ops.fill(accumulated, 0.0);
  std::vector<int32_t> tokens(static_cast<size_t>(micro_rows * config.seq_len));
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<int32_t>(i % static_cast<size_t>(config.model.vocab_size));
  // Passes back to back, as a step runs them (one synchronisation at the
  // end): the time of one.
  const auto passes = [&](int count) {
    const auto start = Clock::now();
    for (int k = 0; k < count; ++k) {
      model.forward(tokens, tokens);
      model.backward();
      if (mixed) {
        ops.cast(model.grad_tensor(), cast_grads);
        ops.add(accumulated, cast_grads, accumulated);
      } else {
        ops.add(accumulated, model.grad_tensor(), accumulated);
      }
    }
    ops.stream().synchronize();
    return seconds_since(start) / count;
  };
  passes(2);       // warm-up: first-use allocations, kernel compilation
  comm.barrier();  // every rank past its start-up before any is timed
  const double pass_seconds = median_seconds(repeats, [&] { return passes(kPassesPerSample); });

  DataParallelRank data_parallel(comm, config.batch_size, WeightPolicy::kShard);
  ShardedAdamW optimizer(comm, ops, total);
  const std::vector<double> zeros(initial.size(), 0.0);
  optimizer.load(initial, zeros, zeros);
  Tensor params(device, DType::kF32, {total});
  const AdamWSettings settings{config.learning_rate, config.beta1, config.beta2, config.adam_eps,
                               config.weight_decay};
  const auto update = [&] {
    comm.barrier();
    const auto start = Clock::now();
    data_parallel.global_loss(1.0);
    optimizer.reduce_scatter_gradients(accumulated);
    optimizer.global_grad_norm();
    optimizer.step(settings, 1, params);
    data_parallel.agree_weights(params, Tensor(), Tensor(), 1);
    return seconds_since(start);
  };
  update();
  const double update_seconds = median_seconds(repeats, update);

  StepProfile profile;
  profile.pass_seconds.resize(static_cast<size_t>(comm.size()));
  double mine[2] = {pass_seconds, update_seconds};
  std::vector<double> all(2 * profile.pass_seconds.size());
  comm.all_gather(mine, all.data(), 2, DType::kF64);
  for (size_t r = 0; r < profile.pass_seconds.size(); ++r) {
    profile.pass_seconds[r] = all[2 * r];
    profile.update_seconds = std::max(profile.update_seconds, all[2 * r + 1]);
  }
  return profile;
}

std::string describe_plan(const SplitPlan& plan, const std::vector<std::string>& device_types) {
  std::string text = fmt::format(
      "plan: rows per rank {}, predicted {:.3f} s a step ({:.3f} s of passes on the bottleneck, "
      "rank {} {}, then {:.3f} s of update), eta {:.3f}, gain {:.2f}\n",
      split_text(plan.rows), plan.predicted_step_seconds,
      plan.compute_seconds[static_cast<size_t>(plan.bottleneck_rank)], plan.bottleneck_rank,
      device_types.at(static_cast<size_t>(plan.bottleneck_rank)), plan.update_seconds, plan.eta,
      plan.gain);
  for (size_t r = 0; r < plan.rows.size(); ++r)
    text += fmt::format("  rank {} {}: {} rows, {:.3f} s of passes, alone {:.0f} tokens/s\n", r,
                        device_types.at(r), plan.rows[r], plan.compute_seconds[r],
                        plan.device_tokens_per_second[r]);
  return text;
}

}  // namespace polychip::training
