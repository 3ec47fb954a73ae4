#include "train_run.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "checkpoint.hpp"
#include "data_parallel.hpp"
#include "pipeline_schedule.hpp"
#include "polychip/atomic_file.hpp"
#include "polychip/comm/bootstrap.hpp"
#include "polychip/comm/communicator.hpp"
#include "polychip/comm/local_launcher.hpp"
#include "polychip/comm/rank_devices.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "reference_trace.hpp"
#include "split_planner.hpp"

namespace polychip::training {
namespace {

// A run already in `dir` is continued (--resume), never written over: a
// forgotten --resume replaced hours of checkpoint with step 1. Nor is a
// folder holding files of a run's names that no run wrote: a Hugging Face
// model folder has a model.safetensors and a config.json.
void refuse_files_to_write_over(const std::string& dir) {
  const std::filesystem::path folder(dir);
  if (std::filesystem::exists(folder / "training_state.json"))
    throw Error(StatusCode::kInvalidArgument,
                "--out '" + dir +
                    "' holds a run already: continue it with --resume, or name another folder");
  std::vector<std::string> taken;
  for (const char* name : kCheckpointFiles)
    if (std::filesystem::exists(folder / name)) taken.push_back(name);
  if (!taken.empty())
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("--out '{}' holds {}, not written by a polychip run (it has no "
                            "training_state.json): the run would write over {}; name a new or "
                            "empty folder",
                            dir, fmt::join(taken, ", "), taken.size() == 1 ? "it" : "them"));
}

TrainConfig checked_config(const TrainRunOptions& options) {
  TrainConfig config = train_preset(options.preset);
  if (options.learning_rate) config.learning_rate = *options.learning_rate;
  if (options.seed) config.seed = *options.seed;
  config.precision = options.precision;
  validate(config);
  if (options.steps < 1) throw Error(StatusCode::kInvalidArgument, "--steps must be >= 1");
  if (options.out_dir.empty()) throw Error(StatusCode::kInvalidArgument, "--out is required");
  if (options.np) comm::check_local_rank_count(*options.np);
  if (options.checkpoint_every < 0)
    throw Error(StatusCode::kInvalidArgument, "--checkpoint-every must be >= 0");
  parse_weight_policy(options.dp_weights);
  if (options.dp_overlap && (options.precision != "fp32" || options.dp_weights != "shard"))
    throw Error(StatusCode::kInvalidArgument,
                "--dp-overlap: the reduction overlaps the backward pass in a data-parallel fp32 "
                "run with the sharded optimizer (--dp-weights shard) only");
  // Refused now, not after the run: the folders the run will write into
  // (a resumed run's is there, or --resume says what is missing).
  if (!options.resume) refuse_files_to_write_over(options.out_dir);
  std::error_code ec;
  if (!options.resume) std::filesystem::create_directories(options.out_dir, ec);
  if (ec)
    throw Error(StatusCode::kInvalidArgument,
                "--out '" + options.out_dir + "': cannot create the folder: " + ec.message());
  if (!options.record_reference.empty())
    check_file_destination("--record-reference", options.record_reference, "the trace's file");
  if (!options.record_reference.empty() &&
      (options.resume || options.learning_rate || options.seed))
    throw Error(StatusCode::kInvalidArgument,
                "--record-reference records the preset's workload from step 1: it cannot be "
                "combined with --resume, --lr or --seed");
  return config;
}

std::vector<std::string> device_specs(const std::string& list) {
  return comm::rank_device_list(list, "--adapter");
}

// A reference trace is one device's run (reference_trace.hpp).
void refuse_reference_recording(const TrainRunOptions& options) {
  if (!options.record_reference.empty())
    throw Error(StatusCode::kInvalidArgument,
                "--record-reference records a single-device run, not a data-parallel one");
}

bool planned_split(const TrainRunOptions& options) { return options.dp_split == "auto"; }

// --pp-layers's blocks per stage (empty without it); the pipeline options
// the planner and the overlapped reduction do not serve yet are refused.
std::vector<int> pipeline_layers(const TrainRunOptions& options, const TrainConfig& config) {
  if (options.pp_layers.empty()) return {};
  if (planned_split(options) || options.plan || options.dp_profile || options.dp_overlap)
    throw Error(StatusCode::kInvalidArgument,
                std::string("--pp-layers: ") +
                    (options.dp_overlap ? "--dp-overlap"
                                        : "the planner (--dp-split auto, --plan, --dp-profile)") +
                    " does not serve a pipeline yet; give --dp-split explicitly or leave it out");
  return parse_layer_split(options.pp_layers, static_cast<int>(config.model.num_layers));
}

// Pipelines of the job: its ranks over the stages (the ranks when no pipeline).
int replica_count(const TrainRunOptions& options, const TrainConfig& config, int ranks) {
  const std::vector<int> layers = pipeline_layers(options, config);
  if (layers.empty()) return ranks;
  const auto stages = static_cast<int>(layers.size());
  if (ranks % stages != 0)
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("--pp-layers {}: {} ranks are not whole pipelines of {} stages; give "
                            "--np a multiple of {}",
                            options.pp_layers, ranks, stages, stages));
  return ranks / stages;
}

// The micro-batch the planner profiles and plans in: --micro-batch, or 1 row.
int64_t planner_micro_rows(const TrainRunOptions& options) {
  return options.micro_batch > 0 ? options.micro_batch : 1;
}

// The rows per rank of a data-parallel run of `ranks`: --dp-split, or even
// (auto: the split of equal devices, which checks that the batch can be
// planned; the run plans its own from the measured profile).
std::vector<int64_t> rank_rows(const TrainRunOptions& options, const TrainConfig& config,
                               int ranks) {
  if (planned_split(options)) {
    const StepProfile equal{std::vector<double>(static_cast<size_t>(ranks), 1.0), 0.0};
    return plan_split(equal, config.batch_size, planner_micro_rows(options), config.seq_len).rows;
  }
  if (options.dp_split.empty()) return uniform_split(config.batch_size, ranks);
  return parse_split(options.dp_split, config.batch_size, ranks);
}

// A rank of a data-parallel job: started by --np or by a launcher of
// several ranks (mpirun, srun, torchrun).
bool is_launched_rank() {
  if (std::getenv("POLYCHIP_COMM_LOCAL_CHILD") != nullptr) return true;
  try {
    return comm::detect_launch().world > 1;
  } catch (const Error&) {
    return false;  // no launcher variables: a single-device run
  }
}

// A step whose loss or gradient norm is not finite ends the run (Megatron's
// NaN check): its weights took the update, so nothing more is written and
// the run directory keeps the last checkpoint. Every rank of a data-parallel
// run sees the same all-reduced loss and agreed norm, so all stop at once.
void refuse_divergence(const StepRecord& r, int64_t last_checkpoint) {
  if (std::isfinite(r.loss) && std::isfinite(r.grad_norm)) return;
  const auto value = [](double v) {
    return std::isnan(v) ? std::string("nan") : fmt::format("{}", v);
  };
  throw Error(StatusCode::kAborted,
              fmt::format("step {}: the loss is {} and the gradient norm {}: training diverged "
                          "(learning rate {:g}); stopped, {}",
                          r.step, value(r.loss), value(r.grad_norm), r.learning_rate,
                          last_checkpoint > 0
                              ? fmt::format("the run directory holds step {}", last_checkpoint)
                              : std::string("nothing was written to the run directory")));
}

// Steps to options.steps; only the lead prints and writes the directory.
// `step1_grad_norms` (may be null) receives gradient_norms() after step 1,
// `step_seconds` (may be null) every step's time.
void train_steps(Trainer& trainer, const TrainRunOptions& options, bool lead,
                 std::ostream& progress,
                 std::vector<std::pair<std::string, double>>* step1_grad_norms = nullptr,
                 std::vector<double>* step_seconds = nullptr) {
  if (trainer.steps_done() == options.steps) {  // resumed at its last step
    if (lead)
      progress << fmt::format("{} holds step {} of {} already: nothing to train, nothing written\n",
                              options.out_dir, options.steps, options.steps);
    return;
  }
  // A resumed run's directory holds the step it resumed from.
  int64_t last_checkpoint = options.resume ? trainer.steps_done() : 0;
  while (trainer.steps_done() < options.steps) {
    const auto start = std::chrono::steady_clock::now();
    const StepRecord r = trainer.step();
    if (r.step == 1 && step1_grad_norms) *step1_grad_norms = gradient_norms(trainer);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (step_seconds) step_seconds->push_back(ms / 1000);
    if (lead)
      progress << fmt::format(
                      "step {:>5}/{}  loss {:.6f}  grad_norm {:.4f}  lr {:.2e}  {:.1f} ms\n",
                      r.step, options.steps, r.loss, r.grad_norm, r.learning_rate, ms)
               << std::flush;
    refuse_divergence(r, last_checkpoint);
    if (options.checkpoint_every > 0 && r.step % options.checkpoint_every == 0) {
      // Every rank: a sharded optimizer's state is gathered from all of them.
      const TrainerState state = trainer.state();
      if (lead) write_checkpoint(options.out_dir, trainer, state);
      last_checkpoint = r.step;
    }
  }
  const TrainerState state = trainer.state();
  if (!lead) return;
  write_checkpoint(options.out_dir, trainer, state);
  progress << "wrote " << options.out_dir << "\n";
}

// ", micro-batches of R rows (K per step)" when the rows run in several passes.
std::string micro_batch_text(const Trainer& trainer) {
  if (trainer.micro_batches() == 1) return "";
  return fmt::format(", micro-batches of {} rows ({} per step{})", trainer.micro_batch_rows(),
                     trainer.micro_batches(), trainer.data_parallel() ? " on rank 0" : "");
}

// Exit code 2 when the checkpoint cannot be resumed (message on errors).
bool restore_if_resuming(Trainer& trainer, const TrainRunOptions& options,
                         const TrainConfig& config, std::ostream& errors, const std::string& who) {
  if (!options.resume) return true;
  try {
    trainer.restore(read_checkpoint(options.out_dir, config));
    if (trainer.steps_done() > options.steps)
      throw Error(
          StatusCode::kInvalidArgument,
          fmt::format("{} holds step {}, past --steps {}: give the total number of steps "
                      "to reach, more than {}",
                      options.out_dir, trainer.steps_done(), options.steps, trainer.steps_done()));
    return true;
  } catch (const Error& e) {
    errors << (who + "--resume: " + e.message() + "\n")
           << std::flush;  // one write: ranks share stderr
    return false;
  }
}

int run_single_device(const TrainRunOptions& options, std::ostream& progress,
                      std::ostream& errors) {
  TrainConfig config;
  Device device;
  try {
    config = checked_config(options);
    if (device_specs(options.device).size() > 1)
      throw Error(StatusCode::kInvalidArgument,
                  "--adapter names several devices: give --np or run under a launcher");
    if (!options.pp_layers.empty())
      throw Error(StatusCode::kInvalidArgument,
                  "--pp-layers splits the model over ranks: give --np or run under a launcher");
    if (!options.dp_split.empty() || options.plan || options.dp_overlap || options.dp_profile)
      throw Error(StatusCode::kInvalidArgument,
                  std::string(options.plan         ? "--plan plans"
                              : options.dp_overlap ? "--dp-overlap overlaps"
                              : options.dp_profile ? "--dp-profile profiles"
                                                   : "--dp-split splits") +
                      " a data-parallel run's batch: give --np or run under a launcher");
    micro_batch_rows(options.micro_batch, config.batch_size, "the batch's");
    device = Runtime::global().device(options.device);
  } catch (const Error& e) {
    errors << "polychip train: " << e.message() << "\n";
    return 2;
  }
  Stream stream(device);
  HalOps ops(Runtime::global().dispatcher(), stream);
  Trainer trainer(config, ops, nullptr, options.micro_batch);
  if (!restore_if_resuming(trainer, options, config, errors, "polychip train: ")) return 2;
  progress << fmt::format("training GPT-2 '{}' ({} parameters) on {} ({}){}, corpus {:016x}\n",
                          options.preset, trainer.model().layout().total(), device.label(),
                          device.device_type(), micro_batch_text(trainer), trainer.corpus_hash());
  std::vector<std::pair<std::string, double>> step1_grad_norms;
  std::vector<GradientCheck> gradient_checks;
  if (!options.record_reference.empty()) record_gradient_checks(trainer, gradient_checks);
  try {
    train_steps(trainer, options, true, progress,
                options.record_reference.empty() ? nullptr : &step1_grad_norms);
  } catch (const Error& e) {
    if (e.code() != StatusCode::kAborted) throw;
    errors << "polychip train: " << e.message() << "\n";
    return 3;
  }
  if (!options.record_reference.empty()) {
    const ReferenceTrace trace =
        make_trace(trainer, options.preset, device.device_type(), std::move(step1_grad_norms),
                   std::move(gradient_checks));
    write_trace(options.record_reference, trace);
    progress << fmt::format("wrote reference trace {} ({}, {}, {})\n", options.record_reference,
                            trace.provenance, trace.device_type, trace.content_hash);
  }
  return 0;
}

// The measured step time of a run: the mean over its steps after the first
// (which pays for first-use allocations and kernel compilation).
double measured_step_seconds(const std::vector<double>& step_seconds) {
  if (step_seconds.size() < 2) return step_seconds.empty() ? 0 : step_seconds.front();
  double sum = 0;
  for (size_t k = 1; k < step_seconds.size(); ++k) sum += step_seconds[k];
  return sum / static_cast<double>(step_seconds.size() - 1);
}

// The profile, the plans and what the lead prints of them (--dp-split auto, --plan).
struct PlannedRun {
  StepProfile profile;
  SplitPlan chosen;           // the split the run uses
  std::vector<int64_t> best;  // the planner's split
};

PlannedRun plan_run(comm::Communicator& comm, HalOps& ops, const TrainConfig& config,
                    const TrainRunOptions& options, const std::vector<std::string>& device_types,
                    bool lead, std::ostream& progress) {
  const int64_t micro = planner_micro_rows(options);
  PlannedRun run;
  run.profile = measure_step_profile(comm, ops, config, micro);
  const SplitPlan best = plan_split(run.profile, config.batch_size, micro, config.seq_len);
  run.best = best.rows;
  run.chosen = planned_split(options)
                   ? best
                   : predict_split(run.profile, rank_rows(options, config, comm.size()), micro,
                                   config.seq_len);
  if (!lead) return run;
  progress << fmt::format(
                  "profile: micro-batches of {} rows; a pass takes {} s; the update {:.4f} s\n",
                  micro, fmt::join(run.profile.pass_seconds, " / "), run.profile.update_seconds)
           << describe_plan(best, device_types);
  const std::vector<int64_t> uniform = uniform_split(config.batch_size, comm.size());
  bool uniform_fits = true;
  for (int64_t r : uniform) uniform_fits = uniform_fits && r % micro == 0;
  if (uniform_fits && uniform != best.rows) {
    const SplitPlan even = predict_split(run.profile, uniform, micro, config.seq_len);
    progress << fmt::format("an even split {} would take {:.3f} s a step, eta {:.3f}\n",
                            split_text(uniform), even.predicted_step_seconds, even.eta);
  }
  if (!planned_split(options) && run.chosen.rows != best.rows)
    progress << fmt::format("--dp-split {} would take {:.3f} s a step, eta {:.3f}\n",
                            split_text(run.chosen.rows), run.chosen.predicted_step_seconds,
                            run.chosen.eta);
  progress << std::flush;
  return run;
}

// What the lead reports after a planned run: the prediction against the
// measurement, printed and written to <out>/data_parallel.json.
void report_planned_run(const PlannedRun& run, const std::vector<double>& step_seconds,
                        double exposed_communication_seconds, const TrainConfig& config,
                        const TrainRunOptions& options,
                        const std::vector<std::string>& device_types, std::ostream& progress) {
  const SplitPlan& plan = run.chosen;
  const double measured = measured_step_seconds(step_seconds);
  if (!(measured > 0)) return;
  const double pool = static_cast<double>(config.batch_size * config.seq_len) / measured;
  const double error = (plan.predicted_step_seconds - measured) / measured;
  // The plan's eta and gain are over its predicted step: scaled to the measured one.
  const double eta = plan.eta * plan.predicted_step_seconds / measured;
  const double gain = plan.gain * plan.predicted_step_seconds / measured;
  progress << fmt::format(
                  "measured {:.3f} s a step (mean of {} steps), predicted {:.3f} s: error "
                  "{:+.1f}%; {:.0f} tokens/s, eta {:.3f}, gain {:.2f}\n",
                  measured, step_seconds.size() > 1 ? step_seconds.size() - 1 : 1,
                  plan.predicted_step_seconds, 100 * error, pool, eta, gain)
           << std::flush;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (size_t r = 0; r < plan.rows.size(); ++r)
    ranks.push_back({{"device_type", device_types.at(r)},
                     {"rows", plan.rows[r]},
                     {"pass_seconds", run.profile.pass_seconds[r]},
                     {"compute_seconds", plan.compute_seconds[r]},
                     {"alone_tokens_per_second", plan.device_tokens_per_second[r]}});
  const nlohmann::ordered_json report = {
      {"split", split_text(plan.rows)},
      {"planned", planned_split(options)},
      {"planner_split", split_text(run.best)},
      {"micro_batch_rows", planner_micro_rows(options)},
      {"ranks", ranks},
      {"update_seconds", plan.update_seconds},
      {"bottleneck_rank", plan.bottleneck_rank},
      {"predicted_step_seconds", plan.predicted_step_seconds},
      {"measured_step_seconds", measured},
      {"prediction_error", error},
      {"tokens_per_second", pool},
      {"eta", eta},
      {"gain", gain},
      {"predicted_eta", plan.eta},
      {"predicted_gain", plan.gain},
      {"overlap", options.dp_overlap},
      {"exposed_communication_seconds", exposed_communication_seconds}};
  write_file_atomically((std::filesystem::path(options.out_dir) / kDataParallelReport).string(),
                        report.dump(2) + "\n");
}

// One rank: its device is entry rank % size of --adapter.
int run_rank(const TrainRunOptions& options, std::ostream& progress, std::ostream& errors) {
  const comm::LaunchInfo launch = comm::detect_launch();
  const std::string who = "polychip train: rank " + std::to_string(launch.rank) + ": ";
  std::unique_ptr<comm::Communicator> comm;
  try {
    const TrainConfig config = checked_config(options);
    refuse_reference_recording(options);
    const std::vector<std::string> specs = device_specs(options.device);
    const Device device = Runtime::global().device(specs[launch.rank % specs.size()]);
    comm::CommConfig comm_config = comm::CommConfig::from_environment();
    comm_config.device_type = device.device_type();
    comm_config.vendor = device.adapter_name();
    comm = comm::Communicator::from_environment(comm_config);
    const bool lead = comm->rank() == 0;
    std::vector<std::string> device_types;
    for (const comm::RankInfo& r : comm->ranks()) device_types.push_back(r.device_type);
    Stream stream(device);
    HalOps ops(Runtime::global().dispatcher(), stream);
    std::optional<PlannedRun> planned;
    if (planned_split(options) || options.plan || options.dp_profile)
      planned = plan_run(*comm, ops, config, options, device_types, lead, progress);
    if (options.plan) return 0;
    const std::vector<int> layers = pipeline_layers(options, config);
    const int replicas = replica_count(options, config, comm->size());
    DataParallelRank data_parallel(
        *comm, config.batch_size, parse_weight_policy(options.dp_weights),
        planned ? planned->chosen.rows : rank_rows(options, config, replicas),
        comm->size() / replicas);
    Trainer trainer(config, ops, &data_parallel,
                    planned_split(options) ? planner_micro_rows(options) : options.micro_batch,
                    layers);
    if (options.dp_overlap) trainer.overlap_gradient_reduction();
    if (!restore_if_resuming(trainer, options, config, errors, who)) {
      comm->abort("rank " + std::to_string(launch.rank) + " could not resume");
      return 2;
    }
    if (lead) {
      std::string ranks;
      for (size_t r = 0; r < device_types.size(); ++r)
        ranks += fmt::format("{}rank {} {}", ranks.empty() ? "" : ", ", r, device_types[r]);
      const std::string parallelism =
          layers.empty()
              ? fmt::format("data parallel over {} ranks ({}), rows per rank", comm->size(), ranks)
              : fmt::format(
                    "pipelines of {} stages (blocks {}) over {} ranks ({}), rows per "
                    "pipeline",
                    layers.size(), options.pp_layers, comm->size(), ranks);
      progress << fmt::format("training GPT-2 '{}' ({} parameters), {} {}{}, corpus {:016x}\n",
                              options.preset, trainer.model().layout().total(), parallelism,
                              split_text(data_parallel.split()), micro_batch_text(trainer),
                              trainer.corpus_hash());
    }
    const int64_t steps_before = trainer.steps_done();
    std::vector<double> step_seconds;
    train_steps(trainer, options, lead, progress, nullptr, &step_seconds);
    if (lead)
      progress << fmt::format(
          "the {} ranks' weights hashed the same after {} of the {} steps trained\n", comm->size(),
          data_parallel.identical_weight_steps(), trainer.steps_done() - steps_before);
    if (lead)
      progress << fmt::format("exposed communication: {:.2f} ms a step ({})\n",
                              1000 * trainer.exposed_communication_seconds(),
                              options.dp_overlap ? "reduction overlapped with the backward pass"
                                                 : "reduction after the backward pass");
    if (lead && data_parallel.weight_syncs() > 0)
      progress << fmt::format(
          "weights taken from rank 0 after {} of {} steps (--dp-weights sync)\n",
          data_parallel.weight_syncs(), trainer.steps_done());
    if (lead && planned)
      report_planned_run(*planned, step_seconds, trainer.exposed_communication_seconds(), config,
                         options, device_types, progress);
  } catch (const Error& e) {
    errors << (who + e.message() + "\n") << std::flush;  // one write: ranks share stderr
    if (comm) comm->abort(who + e.message());
    return e.code() == StatusCode::kInvalidArgument ? 2 : 3;
  }
  return 0;
}

}  // namespace

int run_training(const TrainRunOptions& options, std::ostream& progress, std::ostream& errors) {
  if (is_launched_rank()) return run_rank(options, progress, errors);
  if (!options.np) return run_single_device(options, progress, errors);
  try {  // refuse bad options once, before any rank starts
    const TrainConfig config = checked_config(options);
    const std::vector<int64_t> rows =
        rank_rows(options, config, replica_count(options, config, *options.np));
    for (size_t r = 0; r < rows.size(); ++r)
      micro_batch_rows(options.micro_batch, rows[r], "rank " + std::to_string(r) + "'s");
    refuse_reference_recording(options);
    for (const std::string& spec : device_specs(options.device)) Runtime::global().device(spec);
  } catch (const Error& e) {
    errors << "polychip train: " << e.message() << "\n";
    return 2;
  }
  comm::LocalLaunch launch;
  launch.np = *options.np;
  launch.argv = comm::own_command_line();
  return comm::launch_local(launch);
}

}  // namespace polychip::training
