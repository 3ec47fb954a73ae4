// The training loop of the standard workload: one step is forward, backward,
// global gradient-norm clipping and one AdamW update (fp32 master weights),
// every op through the dispatcher. In bf16 mixed precision the model runs in
// bf16 from a cast of the fp32 master weights, and its bf16 gradients are
// cast to fp32 before clipping and AdamW. The batches come from the step index, so
// a run restored from its state continues bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "corpus.hpp"
#include "gpt2_config.hpp"
#include "gpt2_model.hpp"
#include "pipeline_schedule.hpp"

namespace polychip::training {

class DataParallelRank;  // data_parallel.hpp
class ShardedAdamW;      // sharded_optimizer.hpp

struct StepRecord {
  int64_t step = 0;  // 1-based, as AdamW counts
  double loss = 0;
  double grad_norm = 0;  // before clipping
  double learning_rate = 0;
};

// Everything a resumed run needs besides the config.
struct TrainerState {
  std::vector<double> params, adam_m, adam_v;  // f32 values, flat layout order
  std::vector<StepRecord> history;
};

// Rows per forward/backward pass: `rows` for 0, else micro_batch, which
// must divide them (INVALID_ARGUMENT naming `whose` rows otherwise).
int64_t micro_batch_rows(int64_t micro_batch, int64_t rows, const std::string& whose);

class Trainer {
 public:
  // Validates the config, seeds the weights and generates the corpus. With
  // `data_parallel` (which must outlive the trainer) this is one rank: it
  // computes its share of each global batch of config.batch_size sequences
  // and combines gradients, norm and weight checks with the other ranks.
  // Under WeightPolicy::kShard the ranks share one sharded optimizer.
  // `micro_batch` > 0: the rows (this rank's share, or the whole batch) run
  // as forward/backward passes of that many rows each, their gradients
  // accumulated in fp32 (gradient accumulation; the loss gradient is scaled
  // by the global batch, so the sum is the same gradient); it must divide
  // the rows (INVALID_ARGUMENT otherwise). 0: all the rows in one pass.
  // `pipeline_layers`: the blocks of each pipeline stage (--pp-layers), one
  // entry per stage of `data_parallel`; this rank runs its stage's blocks
  // under the 1F1B schedule over its micro-batches (pipeline_schedule.hpp).
  // Empty: no pipeline.
  Trainer(const TrainConfig& config, HalOps& ops, DataParallelRank* data_parallel = nullptr,
          int64_t micro_batch = 0, const std::vector<int>& pipeline_layers = {});
  ~Trainer();

  // Overlaps the gradient reduction with the last pass's backward
  // (sharded_optimizer.hpp, overlapped_reduction.hpp): each block's
  // gradients are summed over the ranks while the blocks before it are
  // still being differentiated. A sharded fp32 data-parallel run only
  // (INVALID_ARGUMENT otherwise).
  void overlap_gradient_reduction();
  // The mean time per step the ranks waited for the gradient reduction after
  // the backward pass (the stream's work done): the exposed communication.
  // The steps after the first, when there are several: the first pays for
  // first-use allocations (as the measured step time leaves it out).
  double exposed_communication_seconds() const;

  StepRecord step();
  // Called by each step with its number and its gradient before clipping
  // (master_grads(), the stream's work done): a single-device run's whole
  // gradient, a data-parallel rank's own part. Empty: none (the default).
  using GradientObserver = std::function<void(int64_t step, const Tensor& grads)>;
  void set_gradient_observer(GradientObserver observer) {
    gradient_observer_ = std::move(observer);
  }
  int64_t steps_done() const { return static_cast<int64_t>(history_.size()); }
  // Forward/backward passes per step and their rows.
  int64_t micro_batches() const { return micro_batches_; }
  int64_t micro_batch_rows() const { return model_.batch_size(); }
  const std::vector<StepRecord>& history() const { return history_; }
  const TrainConfig& config() const { return config_; }
  const Gpt2Model& model() const { return model_; }
  // What AdamW updates and clipping reads: the model's own parameters and
  // gradients in fp32, the fp32 master copies in bf16 mixed precision (and
  // the fp32 sum of the micro-batches' gradients when there are several).
  const Tensor& master_params() const { return mixed_ ? master_params_ : model_.param_tensor(); }
  const Tensor& master_grads() const {
    return mixed_ || micro_batches_ > 1 ? master_grads_ : model_.grad_tensor();
  }
  uint64_t corpus_hash() const { return corpus_hash_; }
  // Null for a single-device run.
  const DataParallelRank* data_parallel() const { return data_parallel_; }

  // With a sharded optimizer a collective (the moments are gathered): every
  // rank calls it at the same step.
  TrainerState state() const;
  // Throws INVALID_ARGUMENT when the sizes do not fit this config.
  void restore(const TrainerState& state);

 private:
  // Forward and backward over this rank's rows, micro-batch by micro-batch,
  // the fp32 gradients summed into master_grads(); returns the rows' mean loss.
  double forward_backward(const Batch& rows);
  // The same through this rank's pipeline stage, micro-batches in 1F1B order.
  double pipeline_forward_backward(const Batch& rows);
  // Passes one exchange's activations and gradients to the neighbouring stages.
  void exchange(const std::vector<PipelineTransfer>& transfers, int slots);
  // Adds micro-batch k's gradients into the fp32 sum (master_grads()).
  void accumulate_gradients(int64_t k);
  // The global loss and the reduced gradient's norm (data parallel: over
  // every rank's rows).
  void reduce_gradients(StepRecord& record);
  // Hands the next backward pass's gradient regions to the overlapped reduction.
  void reduce_while_differentiating();
  // Clipping, AdamW and the replicas' weight check.
  void update_weights(const StepRecord& record);

  TrainConfig config_;
  HalOps& ops_;
  DataParallelRank* data_parallel_;
  bool mixed_;  // precision bf16
  int64_t local_rows_, micro_batches_;
  std::vector<int> pipeline_layers_;  // empty: no pipeline
  Gpt2Model model_;
  Tensor master_params_;                // bf16 mixed precision only
  Tensor master_grads_;                 // bf16 mixed precision or several micro-batches
  Tensor micro_batch_grads_;            // bf16 mixed precision and several micro-batches
  Tensor adam_m_, adam_v_, grad_norm_;  // a replicated optimizer only: AdamW moments, the norm
  std::unique_ptr<ShardedAdamW> sharded_;
  std::vector<int32_t> corpus_;
  uint64_t corpus_hash_ = 0;
  std::vector<StepRecord> history_;
  GradientObserver gradient_observer_;
  bool overlap_ = false;
  double first_exposed_communication_ = 0, exposed_communication_sum_ = 0;
  int64_t reductions_ = 0;
};

}  // namespace polychip::training
