#include "train_run.hpp"

#include <chrono>

#include <fmt/format.h>

#include "checkpoint.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "reference_trace.hpp"

namespace polychip::training {

int run_training(const TrainRunOptions& options, std::ostream& progress, std::ostream& errors) {
  TrainConfig config;
  Device device;
  try {
    config = train_preset(options.preset);
    if (options.learning_rate) config.learning_rate = *options.learning_rate;
    if (options.seed) config.seed = *options.seed;
    validate(config);
    if (options.steps < 1) throw Error(StatusCode::kInvalidArgument, "--steps must be >= 1");
    if (options.out_dir.empty()) throw Error(StatusCode::kInvalidArgument, "--out is required");
    if (!options.record_reference.empty() &&
        (options.resume || options.learning_rate || options.seed))
      throw Error(StatusCode::kInvalidArgument,
                  "--record-reference records the preset's workload from step 1: it cannot be "
                  "combined with --resume, --lr or --seed");
    device = Runtime::global().device(options.device);
  } catch (const Error& e) {
    errors << "polychip train: " << e.message() << "\n";
    return 2;
  }
  Stream stream(device);
  HalOps ops(Runtime::global().dispatcher(), stream);
  Trainer trainer(config, ops);
  if (options.resume) {
    try {
      trainer.restore(read_checkpoint(options.out_dir, config));
    } catch (const Error& e) {
      errors << "polychip train: --resume: " << e.message() << "\n";
      return 2;
    }
  }
  progress << fmt::format("training GPT-2 '{}' ({} parameters) on {} ({}), corpus {:016x}\n",
                          options.preset, trainer.model().layout().total(), device.label(),
                          device.device_type(), trainer.corpus_hash());
  std::vector<std::pair<std::string, double>> step1_grad_norms;
  while (trainer.steps_done() < options.steps) {
    const auto start = std::chrono::steady_clock::now();
    const StepRecord r = trainer.step();
    if (r.step == 1 && !options.record_reference.empty())
      step1_grad_norms = gradient_norms(trainer);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    progress << fmt::format("step {:>5}/{}  loss {:.6f}  grad_norm {:.4f}  lr {:.2e}  {:.1f} ms\n",
                            r.step, options.steps, r.loss, r.grad_norm, r.learning_rate, ms)
             << std::flush;
    if (options.checkpoint_every > 0 && r.step % options.checkpoint_every == 0)
      write_checkpoint(options.out_dir, trainer);
  }
  write_checkpoint(options.out_dir, trainer);
  progress << "wrote " << options.out_dir << "\n";
  if (!options.record_reference.empty()) {
    const ReferenceTrace trace =
        make_trace(trainer, options.preset, device.device_type(), std::move(step1_grad_norms));
    write_trace(options.record_reference, trace);
    progress << fmt::format("wrote reference trace {} ({}, {}, {})\n", options.record_reference,
                            trace.provenance, trace.device_type, trace.content_hash);
  }
  return 0;
}

}  // namespace polychip::training
