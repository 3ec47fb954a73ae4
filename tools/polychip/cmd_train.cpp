// `polychip train`: the standard GPT-2 training workload on one device.
// Logic in training/ (polychip_training).
#include <iostream>
#include <memory>

#include "command.hpp"
#include "train_run.hpp"

namespace {

const bool registered = polychip::cli::register_command(
    "train", "Train the standard GPT-2 workload on a device, writing curves and checkpoints",
    [](CLI::App& sub) {
      auto o = std::make_shared<polychip::training::TrainRunOptions>();
      sub.add_option("-a,--adapter", o->device,
                     "device: adapter[:index] or device type (cpu, opencl, sim.faithful, "
                     "sim.nvidia_emu, sim.drift, ...: polychip info lists them); data parallel: a "
                     "comma-separated list, rank r uses entry r % size")
          ->capture_default_str();
      sub.add_option("-p,--preset", o->preset,
                     "model and batch sizes: tiny | default | pool | gpt2-small")
          ->capture_default_str();
      sub.add_option("-n,--steps", o->steps, "total optimizer steps")
          ->check(polychip::cli::whole_number<int64_t>())
          ->capture_default_str();
      sub.add_option("-o,--out", o->out_dir, "run directory (weights, optimizer, curves)")
          ->required();
      sub.add_flag("--resume", o->resume, "continue from the checkpoint in --out");
      sub.add_option("--checkpoint-every", o->checkpoint_every,
                     "also write the run directory every K steps (0: at the end only)")
          ->check(polychip::cli::whole_number<int64_t>())
          ->capture_default_str();
      sub.add_option("--lr", o->learning_rate, "learning rate (default: the preset's)");
      sub.add_option("--seed", o->seed, "weights and corpus seed (default: the preset's)")
          ->check(polychip::cli::whole_number<uint64_t>());
      sub.add_option("--precision", o->precision,
                     "fp32 | bf16 (bf16 forward and backward, fp32 master weights and AdamW)")
          ->capture_default_str();
      sub.add_option("--record-reference", o->record_reference,
                     "also write the run's reference trace (per-step loss and gradient norm, "
                     "step-1 gradients, metadata, content hash) to this JSON file");
      sub.add_option("--np", o->np,
                     "data parallel: spawn this many local ranks (built-in launcher)");
      sub.add_option("--dp-weights", o->dp_weights,
                     "data parallel: shard (one optimizer sharded over the ranks: identical "
                     "weights by construction) | check (an optimizer per rank; ranks whose "
                     "weights differ end the job) | sync (an optimizer per rank; they take rank "
                     "0's)")
          ->capture_default_str();
      sub.add_option("--dp-split", o->dp_split,
                     "data parallel: rows of the global batch per rank, by ranks in order, e.g. "
                     "6:2 (one positive count per rank, summing to the preset's batch_size; "
                     "default: an even split), or auto: the split planner's, from each "
                     "device's measured pass time (micro-batches of --micro-batch rows, "
                     "default 1)");
      sub.add_flag("--dp-overlap", o->dp_overlap,
                   "data parallel: sum each block's gradients over the ranks while the backward "
                   "pass goes on to the blocks before it (fp32, --dp-weights shard)");
      sub.add_flag("--dp-profile", o->dp_profile,
                   "data parallel: measure the devices as --plan does and report the prediction "
                   "for this run's split (--dp-split, or even) against the measured step time, "
                   "in data_parallel.json; the split is kept");
      sub.add_flag("--plan", o->plan,
                   "data parallel: measure the devices and the update, print the planner's "
                   "split with its predicted step time, eta and bottleneck (and the prediction "
                   "for --dp-split), then stop without training");
      sub.add_option("--micro-batch", o->micro_batch,
                     "rows per forward/backward pass, gradients accumulated over the rest (it "
                     "must divide the batch, or every rank's share; default: all in one pass)");
      sub.add_option("--pp-layers", o->pp_layers,
                     "pipeline parallel: the model's blocks per stage, by stages in order, e.g. "
                     "3:1 (summing to the preset's layers); consecutive ranks form a pipeline "
                     "(rank r is stage r % stages), --np must be a multiple of the stages, "
                     "--dp-split splits the batch over the pipelines, and each stage runs its "
                     "--micro-batch passes in 1F1B order");
      return [o] { return polychip::training::run_training(*o, std::cout, std::cerr); };
    });

}  // namespace
