// Data parallelism across adapters: one rank per device, each computing the
// gradient of its contiguous share of the global batch (an even split, or
// the row counts given by --dp-split).
// To stay as close as possible to a single-device run, every rank scales its
// loss gradient by 1 / (global batch positions) — the very value the single
// device uses — so the ranks' gradients are partial sums of the same terms
// and their sum is the global mean gradient with no further rounding.
// Under WeightPolicy::kShard (the default) the ranks share one optimizer
// (sharded_optimizer.hpp: reduce-scatter, AdamW on each rank's shard,
// all-gather), so their weights are the same bits by construction. The
// replicated policies all-reduce the gradient and run AdamW on every rank
// with rank 0's gradient norm; adapters whose AdamW kernels round
// differently (OpenCL's sqrt and division need not be correctly rounded)
// then drift apart by ulps: kCheck ends the job with an error naming the
// ranks and the step, kSyncFromRank0 broadcasts rank 0's weights and
// optimizer state whenever they differ. Under every policy the ranks compare
// a hash of their weights after each update.
// With pipeline stages (pipeline_schedule.hpp) the ranks form replicas of
// consecutive ranks, rank r being stage r % stages of replica r / stages:
// the split gives each replica's rows, and every stage of a replica runs
// them. The stages' gradients (zero outside each stage's blocks) are summed
// over every rank by the same reduction, so one sharded optimizer serves
// data and pipeline parallelism alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "corpus.hpp"
#include "polychip/comm/communicator.hpp"
#include "polychip/tensor.hpp"

namespace polychip::training {

struct BatchShare {
  int64_t first_row = 0;
  int64_t rows = 0;
};

// Rows of a global batch per rank, by ranks in order: sizes differing by at
// most one (the first global_batch % ranks ranks take one more). Throws
// INVALID_ARGUMENT when some rank would get no row.
std::vector<int64_t> uniform_split(int64_t global_batch, int ranks);

// Throws INVALID_ARGUMENT naming the problem unless `split` holds `ranks`
// positive row counts summing to global_batch.
void check_split(const std::vector<int64_t>& split, int64_t global_batch, int ranks);

// --dp-split "A:B[:C...]": the rows of the global batch each rank takes, by
// ranks in order (with a micro-batch of one row, a rank's number of
// micro-batches), checked by check_split; an entry that is not a whole
// number throws INVALID_ARGUMENT naming it.
std::vector<int64_t> parse_split(const std::string& text, int64_t global_batch, int ranks);

// "6:2": a split as --dp-split takes it.
std::string split_text(const std::vector<int64_t>& split);

// Rows [first_row, first_row + rows) of the global batch for `rank`: the
// split's shares are contiguous in rank order. Throws INVALID_ARGUMENT for a
// rank outside the split.
BatchShare batch_share(const std::vector<int64_t>& split, int rank);

// The rows of `share` from a global batch of sequences of seq_len tokens.
Batch batch_rows(const Batch& global, const BatchShare& share, int64_t seq_len);

enum class WeightPolicy { kShard, kCheck, kSyncFromRank0 };

// "shard", "check", "sync" (--dp-weights); INVALID_ARGUMENT otherwise.
WeightPolicy parse_weight_policy(const std::string& text);

class DataParallelRank {
 public:
  // `split`: rows per replica (parse_split); empty: uniform_split.
  // pipeline_stages must divide the ranks (INVALID_ARGUMENT otherwise).
  DataParallelRank(comm::Communicator& comm, int64_t global_batch,
                   WeightPolicy policy = WeightPolicy::kShard, std::vector<int64_t> split = {},
                   int pipeline_stages = 1);

  int rank() const { return comm_.rank(); }
  int ranks() const { return comm_.size(); }
  int stages() const { return stages_; }
  int stage() const { return comm_.rank() % stages_; }
  int replica() const { return comm_.rank() / stages_; }
  int replicas() const { return comm_.size() / stages_; }
  int64_t global_batch() const { return global_batch_; }
  const BatchShare& share() const { return share_; }
  // Every replica's rows, by replicas in order.
  const std::vector<int64_t>& split() const { return split_; }

  WeightPolicy policy() const { return policy_; }
  comm::Communicator& communicator() const { return comm_; }

  // local_loss is the mean over this rank's rows (a pipeline's last stage's;
  // the other stages' is not counted); returns the global batch's mean loss
  // (the rows-weighted mean of the replicas' means).
  double global_loss(double local_loss);
  // Sums the gradients over the ranks in place (the replicated policies).
  void all_reduce_gradients(const Tensor& grads);
  // Rank 0's gradient norm, so every rank clips by the same factor.
  double agreed_grad_norm(double local_norm);
  // After the update of `step`: when any rank's weights differ in any bit
  // from rank 0's, throws DATA_CORRUPTION naming the ranks (kShard, kCheck)
  // or overwrites every rank's weights and AdamW moments with rank 0's.
  void agree_weights(const Tensor& params, const Tensor& adam_m, const Tensor& adam_v,
                     int64_t step);
  // Steps whose weights were taken from rank 0 (kSyncFromRank0).
  int64_t weight_syncs() const { return weight_syncs_; }
  // Steps after which every rank's weights hashed the same.
  int64_t identical_weight_steps() const { return identical_weight_steps_; }

 private:
  comm::Communicator& comm_;
  int64_t global_batch_;
  int stages_;
  std::vector<int64_t> split_;
  BatchShare share_;
  WeightPolicy policy_;
  int64_t weight_syncs_ = 0;
  int64_t identical_weight_steps_ = 0;
};

}  // namespace polychip::training
