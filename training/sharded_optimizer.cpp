#include "sharded_optimizer.hpp"

#include <cmath>
#include <string>

#include "polychip/error.hpp"

namespace polychip::training {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::vector<float> f32_values(const std::vector<double>& values, size_t begin, size_t length,
                              size_t padded_length) {
  std::vector<float> out(padded_length, 0.0f);
  for (size_t i = 0; i < length; ++i) out[i] = static_cast<float>(values[begin + i]);
  return out;
}

}  // namespace

ShardedAdamW::ShardedAdamW(comm::Communicator& comm, HalOps& ops, int64_t total)
    : comm_(comm),
      ops_(ops),
      total_(total),
      shard_size_(ceil_div(total, comm.size())),
      shard_begin_(std::min(total, comm.rank() * shard_size_)),
      shard_length_(std::min(shard_size_, total - shard_begin_)) {
  if (total < 1)
    throw Error(StatusCode::kInvalidArgument, "sharded optimizer: no parameters to shard");
  const Device& device = ops.stream().device();
  const int64_t padded = shard_size_ * comm.size();
  params_ = Tensor(device, DType::kF32, {padded});
  grads_ = Tensor(device, DType::kF32, {padded});
  adam_m_ = Tensor(device, DType::kF32, {shard_size_});
  adam_v_ = Tensor(device, DType::kF32, {shard_size_});
  norm_ = Tensor(device, DType::kF32, {1});
  // The padding is never written by the model: zero, it adds nothing to the
  // reduced gradient's norm.
  ops_.fill(params_, 0.0);
  ops_.fill(grads_, 0.0);
  ops_.fill(adam_m_, 0.0);
  ops_.fill(adam_v_, 0.0);
  ops_.stream().synchronize();
}

TensorView ShardedAdamW::padded_view(const Tensor& padded, int64_t begin, int64_t length) const {
  return row_major_view(padded.buffer(), DType::kF32, {length}, begin);
}

void ShardedAdamW::load(const std::vector<double>& params, const std::vector<double>& adam_m,
                        const std::vector<double>& adam_v) {
  const auto n = static_cast<size_t>(total_);
  if (params.size() != n || adam_m.size() != n || adam_v.size() != n)
    throw Error(StatusCode::kInvalidArgument,
                "sharded optimizer: " + std::to_string(params.size()) + " parameters given, " +
                    std::to_string(total_) + " expected");
  params_.copy_from_host(f32_values(params, 0, n, static_cast<size_t>(params_.numel())));
  const auto begin = static_cast<size_t>(shard_begin_), length = static_cast<size_t>(shard_length_),
             size = static_cast<size_t>(shard_size_);
  adam_m_.copy_from_host(f32_values(adam_m, begin, length, size));
  adam_v_.copy_from_host(f32_values(adam_v, begin, length, size));
}

void ShardedAdamW::reduce_scatter_gradients(const Tensor& grads) {
  if (grads.numel() != total_ || grads.dtype() != DType::kF32)
    throw Error(StatusCode::kInvalidArgument, "sharded optimizer: the gradients are not the " +
                                                  std::to_string(total_) +
                                                  " fp32 values of the parameters");
  ops_.copy(grads, padded_view(grads_, 0, total_));
  ops_.stream().synchronize();
  // In place: this rank's shard of the padded buffer receives its sum.
  const comm::BufferRef all(grads_.buffer()),
      own(grads_.buffer(), static_cast<uint64_t>(comm_.rank() * shard_size_) * sizeof(float));
  comm_.reduce_scatter(all, own, static_cast<uint64_t>(shard_size_), DType::kF32,
                       comm::ReduceOp::kSum);
}

void ShardedAdamW::begin_overlapped_reduction() {
  if (!overlapped_) overlapped_ = std::make_unique<OverlappedReduction>(comm_, total_, shard_size_);
  overlapped_->begin();
}

void ShardedAdamW::reduce_region(const Tensor& grads, int64_t begin, int64_t end) {
  if (!overlapped_)
    throw Error(StatusCode::kInvalidArgument,
                "sharded optimizer: reduce_region before begin_overlapped_reduction");
  ops_.stream().synchronize();
  overlapped_->add_region(grads, begin, end);
}

void ShardedAdamW::finish_overlapped_reduction() {
  if (!overlapped_)
    throw Error(StatusCode::kInvalidArgument,
                "sharded optimizer: finish_overlapped_reduction before begin");
  const std::vector<float>& own = overlapped_->finish();
  grads_.buffer().copy_from_host(own.data(), own.size() * sizeof(float),
                                 static_cast<uint64_t>(comm_.rank() * shard_size_) * sizeof(float));
}

double ShardedAdamW::global_grad_norm() {
  double squares = 0;
  if (shard_length_ > 0) {
    ops_.l2_norm(padded_view(grads_, comm_.rank() * shard_size_, shard_length_), norm_);
    ops_.stream().synchronize();
    float norm = 0;
    norm_.copy_to_host(&norm);
    squares = static_cast<double>(norm) * norm;  // exact: a float's square fits a double
  }
  std::vector<double> per_rank(static_cast<size_t>(comm_.size()));
  comm_.all_gather(&squares, per_rank.data(), 1, DType::kF64);
  double sum = 0;
  for (double s : per_rank) sum += s;  // rank order, on every rank
  return std::sqrt(sum);
}

void ShardedAdamW::scale_gradients(double factor) {
  if (shard_length_ == 0) return;
  const TensorView own = padded_view(grads_, comm_.rank() * shard_size_, shard_length_);
  ops_.scale(own, factor, own);
}

void ShardedAdamW::step(const AdamWSettings& s, int64_t step, const Tensor& params) {
  if (params.numel() != total_ || params.dtype() != DType::kF32)
    throw Error(StatusCode::kInvalidArgument, "sharded optimizer: the parameters are not " +
                                                  std::to_string(total_) + " fp32 values");
  const int64_t own_begin = comm_.rank() * shard_size_;
  if (shard_length_ > 0)
    ops_.adamw(padded_view(params_, own_begin, shard_length_),
               padded_view(grads_, own_begin, shard_length_),
               padded_view(adam_m_, 0, shard_length_), padded_view(adam_v_, 0, shard_length_),
               s.learning_rate, s.beta1, s.beta2, s.eps, s.weight_decay, step);
  ops_.stream().synchronize();
  const comm::BufferRef all(params_.buffer()),
      own(params_.buffer(), static_cast<uint64_t>(own_begin) * sizeof(float));
  comm_.all_gather(own, all, static_cast<uint64_t>(shard_size_), DType::kF32);
  ops_.copy(padded_view(params_, 0, total_), params);
  ops_.stream().synchronize();
}

std::vector<double> ShardedAdamW::gathered(const Tensor& shard) const {
  const std::vector<float> own = shard.to_vector<float>();
  std::vector<float> all(static_cast<size_t>(shard_size_ * comm_.size()));
  comm_.all_gather(own.data(), all.data(), static_cast<uint64_t>(shard_size_), DType::kF32);
  return {all.begin(), all.begin() + total_};
}

std::vector<double> ShardedAdamW::gathered_adam_m() const { return gathered(adam_m_); }
std::vector<double> ShardedAdamW::gathered_adam_v() const { return gathered(adam_v_); }

}  // namespace polychip::training
