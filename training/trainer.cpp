#include "trainer.hpp"

#include <chrono>

#include "corpus.hpp"
#include "data_parallel.hpp"
#include "polychip/error.hpp"
#include "sharded_optimizer.hpp"

namespace polychip::training {

int64_t micro_batch_rows(int64_t micro_batch, int64_t rows, const std::string& whose) {
  if (micro_batch == 0) return rows;
  if (micro_batch < 0 || rows % micro_batch != 0)
    throw Error(StatusCode::kInvalidArgument,
                "--micro-batch " + std::to_string(micro_batch) + ": " + whose + " " +
                    std::to_string(rows) + " rows are not a whole number of micro-batches of " +
                    std::to_string(micro_batch) +
                    " rows; give a row count that divides the batch (every rank's share)");
  return micro_batch;
}

namespace {

const TrainConfig& validated(const TrainConfig& config) {
  validate(config);
  return config;
}

void set_f32_tensor(Tensor& t, const std::vector<double>& values) {
  const std::vector<float> f(values.begin(), values.end());
  t.copy_from_host(f.data());
}

int64_t local_batch(const TrainConfig& config, const DataParallelRank* data_parallel) {
  return data_parallel ? data_parallel->share().rows : config.batch_size;
}

int64_t checked_micro_batch(int64_t micro_batch, int64_t rows,
                            const DataParallelRank* data_parallel) {
  return micro_batch_rows(
      micro_batch, rows,
      data_parallel ? "rank " + std::to_string(data_parallel->rank()) + "'s" : "the batch's");
}

bool shards_optimizer(const DataParallelRank* data_parallel) {
  return data_parallel && data_parallel->policy() == WeightPolicy::kShard;
}

// The pipeline stage this rank runs (the whole model without a pipeline).
StageLayers checked_stage_layers(const std::vector<int>& pipeline_layers,
                                 const DataParallelRank* data_parallel) {
  if (pipeline_layers.empty()) return {};
  if (!data_parallel || data_parallel->stages() != static_cast<int>(pipeline_layers.size()))
    throw Error(StatusCode::kInvalidArgument,
                "training: a pipeline of " + std::to_string(pipeline_layers.size()) +
                    " stages needs a data-parallel group of as many stages per replica");
  return stage_layers(pipeline_layers, data_parallel->stage());
}

int stage_activation_slots(const std::vector<int>& pipeline_layers,
                           const DataParallelRank* data_parallel, int64_t micro_batches) {
  if (pipeline_layers.empty()) return 1;
  return activation_slots(data_parallel->stage(), data_parallel->stages(),
                          static_cast<int>(micro_batches));
}

// A replicated optimizer's moment: the whole model; none when sharded.
Tensor full_moment(const Device& device, int64_t total, bool sharded) {
  return sharded ? Tensor() : Tensor(device, DType::kF32, {total});
}

}  // namespace

Trainer::Trainer(const TrainConfig& config, HalOps& ops, DataParallelRank* data_parallel,
                 int64_t micro_batch, const std::vector<int>& pipeline_layers)
    : config_(validated(config)),
      ops_(ops),
      data_parallel_(data_parallel),
      mixed_(config.precision == "bf16"),
      local_rows_(local_batch(config, data_parallel)),
      micro_batches_(local_rows_ / checked_micro_batch(micro_batch, local_rows_, data_parallel)),
      pipeline_layers_(pipeline_layers),
      model_(config.model, local_rows_ / micro_batches_, config.seq_len,
             mixed_ ? DType::kBF16 : DType::kF32, ops,
             checked_stage_layers(pipeline_layers, data_parallel),
             stage_activation_slots(pipeline_layers, data_parallel, micro_batches_)),
      adam_m_(full_moment(ops.stream().device(), model_.layout().total(),
                          shards_optimizer(data_parallel))),
      adam_v_(full_moment(ops.stream().device(), model_.layout().total(),
                          shards_optimizer(data_parallel))),
      grad_norm_(shards_optimizer(data_parallel) ? Tensor()
                                                 : Tensor(ops.stream().device(), DType::kF32, {1})),
      corpus_(generate_corpus(config.model.vocab_size, config.corpus_tokens, config.seed)),
      corpus_hash_(training::corpus_hash(corpus_)) {
  const std::vector<double> initial =
      gpt2_initial_params(model_.layout(), config.model.num_layers, config.seed);
  const int64_t total = model_.layout().total();
  if (mixed_ || micro_batches_ > 1)
    master_grads_ = Tensor(ops.stream().device(), DType::kF32, {total});
  if (mixed_ && micro_batches_ > 1)
    micro_batch_grads_ = Tensor(ops.stream().device(), DType::kF32, {total});
  if (mixed_) {
    master_params_ = Tensor(ops.stream().device(), DType::kF32, {total});
    set_f32_tensor(master_params_, initial);
    ops_.cast(master_params_, model_.param_tensor());
  } else {
    model_.set_params(initial);
  }
  if (data_parallel_ && data_parallel_->global_batch() != config.batch_size)
    throw Error(StatusCode::kInvalidArgument,
                "training: the data-parallel global batch differs from the config's");
  // A micro-batch's or a rank's gradient is its part of the global batch's.
  model_.set_loss_positions(config.batch_size * config.seq_len);
  if (shards_optimizer(data_parallel_)) {
    sharded_ = std::make_unique<ShardedAdamW>(data_parallel_->communicator(), ops_, total);
    const std::vector<double> zeros(initial.size(), 0.0);
    sharded_->load(initial, zeros, zeros);
  } else {
    ops_.fill(adam_m_, 0.0);
    ops_.fill(adam_v_, 0.0);
  }
}

Trainer::~Trainer() = default;

void Trainer::overlap_gradient_reduction() {
  if (!pipeline_layers_.empty())
    throw Error(StatusCode::kInvalidArgument,
                "--dp-overlap: the overlapped reduction follows one whole model's backward pass, "
                "not a pipeline stage's (--pp-layers); run one of them");
  if (!sharded_ || mixed_)
    throw Error(StatusCode::kInvalidArgument,
                "--dp-overlap: the reduction overlaps the backward pass in a data-parallel fp32 "
                "run with the sharded optimizer (--dp-weights shard) only");
  overlap_ = true;
}

double Trainer::exposed_communication_seconds() const {
  if (reductions_ == 0) return 0;
  if (reductions_ == 1) return first_exposed_communication_;
  return exposed_communication_sum_ / static_cast<double>(reductions_ - 1);
}

void Trainer::reduce_gradients(StepRecord& record) {
  const Tensor& grads = master_grads();
  if (data_parallel_) {
    ops_.stream().synchronize();
    const auto start = std::chrono::steady_clock::now();
    ops_.dispatcher().invoke_hook("comm.before_all_reduce", ops_.stream().device());
    // Before any other collective: the communication thread is done after it.
    if (overlap_)
      sharded_->finish_overlapped_reduction();
    else if (sharded_)
      sharded_->reduce_scatter_gradients(grads);
    else
      data_parallel_->all_reduce_gradients(grads);
    const double exposed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    (reductions_ == 0 ? first_exposed_communication_ : exposed_communication_sum_) += exposed;
    ++reductions_;
    record.loss = data_parallel_->global_loss(record.loss);
  }
  if (sharded_) {
    record.grad_norm = sharded_->global_grad_norm();
    return;
  }
  ops_.l2_norm(grads, grad_norm_);
  ops_.stream().synchronize();
  float norm = 0;
  grad_norm_.copy_to_host(&norm);
  record.grad_norm = data_parallel_ ? data_parallel_->agreed_grad_norm(norm) : norm;
}

void Trainer::update_weights(const StepRecord& record) {
  const Tensor& params = master_params();
  const Tensor& grads = master_grads();
  const bool clip = config_.grad_clip > 0 && record.grad_norm > config_.grad_clip;
  const double clip_factor = config_.grad_clip / (record.grad_norm + 1e-6);
  ops_.dispatcher().invoke_hook("train.before_optimizer_step", ops_.stream().device());
  if (sharded_) {
    if (clip) sharded_->scale_gradients(clip_factor);
    sharded_->step({config_.learning_rate, config_.beta1, config_.beta2, config_.adam_eps,
                    config_.weight_decay},
                   record.step, params);
  } else {
    if (clip) ops_.scale(grads, clip_factor, grads);
    ops_.adamw(params, grads, adam_m_, adam_v_, config_.learning_rate, config_.beta1, config_.beta2,
               config_.adam_eps, config_.weight_decay, record.step);
    ops_.stream().synchronize();
  }
  if (data_parallel_) data_parallel_->agree_weights(params, adam_m_, adam_v_, record.step);
}

double Trainer::forward_backward(const Batch& rows) {
  if (!pipeline_layers_.empty()) return pipeline_forward_backward(rows);
  const Device& device = ops_.stream().device();
  Dispatcher& dispatcher = ops_.dispatcher();
  const int64_t rows_per_pass = model_.batch_size();
  double loss_sum = 0;
  for (int64_t k = 0; k < micro_batches_; ++k) {
    const Batch micro = micro_batches_ == 1
                            ? rows
                            : batch_rows(rows, {k * rows_per_pass, rows_per_pass}, config_.seq_len);
    const bool overlapped = overlap_ && k + 1 == micro_batches_;
    if (overlapped) reduce_while_differentiating();
    dispatcher.invoke_hook("train.before_forward", device);
    loss_sum += model_.forward(micro.tokens, micro.targets);
    model_.backward();
    model_.set_gradients_ready(nullptr);
    if (!overlapped) accumulate_gradients(k);  // else summed region by region
  }
  return loss_sum / static_cast<double>(micro_batches_);
}

// The fp32 sum, in micro-batch order.
void Trainer::accumulate_gradients(int64_t k) {
  if (k == 0) {
    if (mixed_)
      ops_.cast(model_.grad_tensor(), master_grads_);
    else if (micro_batches_ > 1)
      ops_.copy(model_.grad_tensor(), master_grads_);
  } else if (mixed_) {
    ops_.cast(model_.grad_tensor(), micro_batch_grads_);
    ops_.add(master_grads_, micro_batch_grads_, master_grads_);
  } else {
    ops_.add(master_grads_, model_.grad_tensor(), master_grads_);
  }
}

double Trainer::pipeline_forward_backward(const Batch& rows) {
  const int stage = data_parallel_->stage(), stages = data_parallel_->stages();
  const auto micro_batches = static_cast<int>(micro_batches_);
  const int slots = activation_slots(stage, stages, micro_batches);
  const int64_t rows_per_pass = model_.batch_size();
  double loss_sum = 0;
  for (const PipelineStep& step : one_forward_one_backward(stage, stages, micro_batches)) {
    const int k = step.micro_batch;
    switch (step.kind) {
      case PipelineStep::Kind::kForward: {
        const Batch micro = batch_rows(rows, {k * rows_per_pass, rows_per_pass}, config_.seq_len);
        ops_.dispatcher().invoke_hook("train.before_forward", ops_.stream().device());
        loss_sum += model_.forward(micro.tokens, micro.targets, k % slots);
        break;
      }
      case PipelineStep::Kind::kBackward:
        model_.backward(k % slots);
        accumulate_gradients(k);
        break;
      case PipelineStep::Kind::kExchange:
        exchange(step.transfers, slots);
        break;
    }
  }
  return loss_sum / static_cast<double>(micro_batches_);
}

void Trainer::exchange(const std::vector<PipelineTransfer>& transfers, int slots) {
  comm::Communicator& comm = data_parallel_->communicator();
  ops_.stream().synchronize();  // what is sent is computed
  comm.group_start();
  for (const PipelineTransfer& t : transfers) {
    const int slot = t.micro_batch % slots;
    const int next = comm.rank() + 1, previous = comm.rank() - 1;
    // By its buffer, which outlives the group (a view's device would not).
    const auto pass = [&](const Tensor& tensor, bool send, int peer) {
      const auto count = static_cast<uint64_t>(tensor.numel());
      if (send)
        comm.send(tensor.buffer(), count, tensor.dtype(), peer);
      else
        comm.recv(tensor.buffer(), count, tensor.dtype(), peer);
    };
    switch (t.what) {
      case Transfer::kSendActivation:
        pass(model_.stage_output(slot), true, next);
        break;
      case Transfer::kRecvActivation:
        pass(model_.stage_input(slot), false, previous);
        break;
      case Transfer::kSendGradient:
        pass(model_.input_gradient(), true, previous);
        break;
      case Transfer::kRecvGradient:
        pass(model_.output_gradient(), false, next);
        break;
    }
  }
  comm.group_end();
}

// The last pass's regions, as backward finishes them: added to the earlier
// passes' fp32 sum (gradient accumulation), then handed to the reduction.
void Trainer::reduce_while_differentiating() {
  sharded_->begin_overlapped_reduction();
  model_.set_gradients_ready([this](int64_t begin, int64_t end) {
    if (micro_batches_ > 1) {
      const TensorView sum =
          row_major_view(master_grads_.buffer(), DType::kF32, {end - begin}, begin);
      ops_.add(sum,
               row_major_view(model_.grad_tensor().buffer(), DType::kF32, {end - begin}, begin),
               sum);
    }
    sharded_->reduce_region(master_grads(), begin, end);
  });
}

StepRecord Trainer::step() {
  const Device& device = ops_.stream().device();
  Dispatcher& dispatcher = ops_.dispatcher();
  StepRecord record;
  record.step = steps_done() + 1;
  record.learning_rate = config_.learning_rate;
  Batch batch = batch_at(corpus_, steps_done(), config_.batch_size, config_.seq_len);
  if (data_parallel_) batch = batch_rows(batch, data_parallel_->share(), config_.seq_len);
  record.loss = forward_backward(batch);
  dispatcher.invoke_hook("train.after_backward", device);
  reduce_gradients(record);
  if (gradient_observer_) {
    ops_.stream().synchronize();
    gradient_observer_(record.step, master_grads());
  }
  update_weights(record);
  if (mixed_) {
    ops_.cast(master_params_, model_.param_tensor());
    ops_.stream().synchronize();
  }
  history_.push_back(record);
  return record;
}

TrainerState Trainer::state() const {
  ops_.stream().synchronize();
  if (sharded_)
    return {host_values(master_params()), sharded_->gathered_adam_m(), sharded_->gathered_adam_v(),
            history_};
  return {host_values(master_params()), host_values(adam_m_), host_values(adam_v_), history_};
}

void Trainer::restore(const TrainerState& state) {
  const auto n = static_cast<size_t>(model_.layout().total());
  if (state.params.size() != n || state.adam_m.size() != n || state.adam_v.size() != n)
    throw Error(StatusCode::kInvalidArgument,
                "training: the saved state holds " + std::to_string(state.params.size()) +
                    " parameters, this config has " + std::to_string(n));
  if (mixed_) {
    set_f32_tensor(master_params_, state.params);
    ops_.cast(master_params_, model_.param_tensor());
  } else {
    model_.set_params(state.params);
  }
  if (sharded_) {
    sharded_->load(state.params, state.adam_m, state.adam_v);
  } else {
    set_f32_tensor(adam_m_, state.adam_m);
    set_f32_tensor(adam_v_, state.adam_v);
  }
  history_ = state.history;
}

}  // namespace polychip::training
