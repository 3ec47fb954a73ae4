// Data parallelism across adapters (uniform split): one rank per device,
// each computing the gradient of its contiguous share of the global batch.
// To stay as close as possible to a single-device run, every rank scales its
// loss gradient by 1 / (global batch positions) — the very value the single
// device uses — so the ranks' gradients are partial sums of the same terms
// and one all-reduce (sum) gives the global mean gradient with no further
// rounding. The gradient norm is rank 0's (broadcast), so every rank clips
// by the same factor, and after each AdamW update the ranks compare a hash
// of their weights. Adapters whose AdamW kernels round differently (OpenCL's
// sqrt and division need not be correctly rounded) drift apart by ulps:
// under WeightPolicy::kCheck that ends the job with an error naming the
// ranks and the step; under kSyncFromRank0 rank 0's weights and optimizer
// state are broadcast whenever the hashes differ (the run is then rank 0's
// optimizer applied to the global gradient).
#pragma once

#include <cstdint>

#include "corpus.hpp"
#include "polychip/comm/communicator.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/tensor.hpp"

namespace polychip::training {

struct BatchShare {
  int64_t first_row = 0;
  int64_t rows = 0;
};

// Rows [first_row, first_row + rows) of a global batch for `rank` of `ranks`:
// contiguous shares whose sizes differ by at most one (the first
// global_batch % ranks ranks take one more). Throws INVALID_ARGUMENT when
// some rank would get no row.
BatchShare uniform_batch_share(int64_t global_batch, int rank, int ranks);

// The rows of `share` from a global batch of sequences of seq_len tokens.
Batch batch_rows(const Batch& global, const BatchShare& share, int64_t seq_len);

enum class WeightPolicy { kCheck, kSyncFromRank0 };

class DataParallelRank {
 public:
  DataParallelRank(comm::Communicator& comm, int64_t global_batch,
                   WeightPolicy policy = WeightPolicy::kCheck);

  int rank() const { return comm_.rank(); }
  int ranks() const { return comm_.size(); }
  int64_t global_batch() const { return global_batch_; }
  const BatchShare& share() const { return share_; }

  // Calls `comm.before_all_reduce` for the device, then sums the gradients
  // over the ranks in place. local_loss is the mean over this rank's rows;
  // returns the global batch's mean loss.
  double all_reduce_gradients(Dispatcher& dispatcher, const Device& device, const Tensor& grads,
                              double local_loss);
  // Rank 0's gradient norm, so every rank clips by the same factor.
  double agreed_grad_norm(double local_norm);
  // After the update of `step`: when any rank's weights differ in any bit
  // from rank 0's, throws DATA_CORRUPTION naming the ranks (kCheck) or
  // overwrites every rank's weights and AdamW moments with rank 0's.
  void agree_weights(const Tensor& params, const Tensor& adam_m, const Tensor& adam_v,
                     int64_t step);
  // Steps whose weights were taken from rank 0 (kSyncFromRank0).
  int64_t weight_syncs() const { return weight_syncs_; }

 private:
  comm::Communicator& comm_;
  int64_t global_batch_;
  BatchShare share_;
  WeightPolicy policy_;
  int64_t weight_syncs_ = 0;
};

}  // namespace polychip::training
