// The training loop of the standard workload: one step is forward, backward,
// global gradient-norm clipping and one AdamW update (fp32 master weights),
// every op through the dispatcher. In bf16 mixed precision the model runs in
// bf16 from a cast of the fp32 master weights, and its bf16 gradients are
// cast to fp32 before clipping and AdamW. The batches come from the step index, so
// a run restored from its state continues bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "gpt2_config.hpp"
#include "gpt2_model.hpp"

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

class Trainer {
 public:
  // Validates the config, seeds the weights and generates the corpus. With
  // `data_parallel` (which must outlive the trainer) this is one rank: it
  // computes its share of each global batch of config.batch_size sequences
  // and combines gradients, norm and weight checks with the other ranks.
  // Under WeightPolicy::kShard the ranks share one sharded optimizer.
  Trainer(const TrainConfig& config, HalOps& ops, DataParallelRank* data_parallel = nullptr);
  ~Trainer();

  StepRecord step();
  int64_t steps_done() const { return static_cast<int64_t>(history_.size()); }
  const std::vector<StepRecord>& history() const { return history_; }
  const TrainConfig& config() const { return config_; }
  const Gpt2Model& model() const { return model_; }
  // What AdamW updates and clipping reads: the model's own parameters and
  // gradients in fp32, the fp32 master copies in bf16 mixed precision.
  const Tensor& master_params() const { return mixed_ ? master_params_ : model_.param_tensor(); }
  const Tensor& master_grads() const { return mixed_ ? master_grads_ : model_.grad_tensor(); }
  uint64_t corpus_hash() const { return corpus_hash_; }
  // Null for a single-device run.
  const DataParallelRank* data_parallel() const { return data_parallel_; }

  // With a sharded optimizer a collective (the moments are gathered): every
  // rank calls it at the same step.
  TrainerState state() const;
  // Throws INVALID_ARGUMENT when the sizes do not fit this config.
  void restore(const TrainerState& state);

 private:
  // The global loss and the reduced gradient's norm (data parallel: over
  // every rank's rows).
  void reduce_gradients(StepRecord& record);
  // Clipping, AdamW and the replicas' weight check.
  void update_weights(const StepRecord& record);

  TrainConfig config_;
  HalOps& ops_;
  DataParallelRank* data_parallel_;
  bool mixed_;  // precision bf16
  Gpt2Model model_;
  Tensor master_params_, master_grads_;  // bf16 mixed precision only
  Tensor adam_m_, adam_v_, grad_norm_;   // AdamW moments: a replicated optimizer only
  std::unique_ptr<ShardedAdamW> sharded_;
  std::vector<int32_t> corpus_;
  uint64_t corpus_hash_ = 0;
  std::vector<StepRecord> history_;
};

}  // namespace polychip::training
