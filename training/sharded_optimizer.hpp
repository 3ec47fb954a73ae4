// ZeRO stage 1 for the data-parallel ranks: the flat fp32 parameters are cut
// into one shard per rank (equal lengths ceil(total / ranks), the last rank's
// padded), and each rank keeps the master values and AdamW moments of its
// shard only. A step reduce-scatters the gradients (each rank receives the
// global sum of its shard), assembles the global gradient norm from the
// shards' sums of squares in rank order (so every rank clips by the same
// factor), runs AdamW on its shard with its own device's kernel, and
// all-gathers the updated shards. Every element is updated by exactly one
// rank and copied bit for bit to the others, so replicas on different
// vendors hold the same bits by construction; the reduce-scatter and the
// all-gather together move what one all-reduce moves, and the optimizer's
// memory is divided by the number of ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "hal_ops.hpp"
#include "overlapped_reduction.hpp"
#include "polychip/comm/communicator.hpp"
#include "polychip/tensor.hpp"

namespace polychip::training {

struct AdamWSettings {
  double learning_rate = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
};

class ShardedAdamW {
 public:
  // `total`: flat parameter count, the same on every rank.
  ShardedAdamW(comm::Communicator& comm, HalOps& ops, int64_t total);

  int64_t shard_begin() const { return shard_begin_; }
  // This rank's real elements (the padding excluded); may be 0 with more
  // ranks than elements.
  int64_t shard_length() const { return shard_length_; }

  // Every rank's master values (total elements, identical on every rank)
  // and the full moments: this rank keeps its shard.
  void load(const std::vector<double>& params, const std::vector<double>& adam_m,
            const std::vector<double>& adam_v);
  // Sums `grads` (fp32, total elements) over the ranks, keeping this rank's
  // shard (reduce-scatter). `grads` itself is left as it was.
  void reduce_scatter_gradients(const Tensor& grads);
  // The same sum overlapped with the backward pass (overlapped_reduction.hpp):
  // begin_overlapped_reduction(), then reduce_region() for every region of
  // `grads` as soon as the backward pass has finished it (each element once,
  // in the same order on every rank; the stream's work is waited for), then
  // finish_overlapped_reduction() where reduce_scatter_gradients would be.
  void begin_overlapped_reduction();
  void reduce_region(const Tensor& grads, int64_t begin, int64_t end);
  void finish_overlapped_reduction();
  // L2 norm of the whole reduced gradient, the same double on every rank.
  double global_grad_norm();
  void scale_gradients(double factor);
  // AdamW on this rank's shard, then the all-gather: `params` (fp32, total
  // elements) receives every rank's updated shard.
  void step(const AdamWSettings& settings, int64_t step, const Tensor& params);
  // The full AdamW moments, gathered from every rank (a collective: every
  // rank calls it at the same point).
  std::vector<double> gathered_adam_m() const;
  std::vector<double> gathered_adam_v() const;

 private:
  std::vector<double> gathered(const Tensor& shard) const;
  TensorView padded_view(const Tensor& padded, int64_t begin, int64_t length) const;

  comm::Communicator& comm_;
  HalOps& ops_;
  int64_t total_, shard_size_, shard_begin_, shard_length_;
  Tensor params_, grads_;   // ranks x shard_size_: every shard, padded
  Tensor adam_m_, adam_v_;  // shard_size_: this rank's
  Tensor norm_;
  std::unique_ptr<OverlappedReduction> overlapped_;  // made by the first begin
};

}  // namespace polychip::training
