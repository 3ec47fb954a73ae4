#include "data_parallel.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "polychip/error.hpp"

namespace polychip::training {

BatchShare uniform_batch_share(int64_t global_batch, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw Error(StatusCode::kInvalidArgument, "data parallelism: rank " + std::to_string(rank) +
                                                  " outside 0.." + std::to_string(ranks - 1));
  if (global_batch < ranks)
    throw Error(StatusCode::kInvalidArgument,
                "data parallelism: a global batch of " + std::to_string(global_batch) +
                    " sequences cannot give each of " + std::to_string(ranks) + " ranks a row");
  const int64_t base = global_batch / ranks, extra = global_batch % ranks;
  return {.first_row = rank * base + std::min<int64_t>(rank, extra),
          .rows = base + (rank < extra ? 1 : 0)};
}

Batch batch_rows(const Batch& global, const BatchShare& share, int64_t seq_len) {
  const auto begin = static_cast<size_t>(share.first_row * seq_len);
  const auto end = static_cast<size_t>((share.first_row + share.rows) * seq_len);
  return {{global.tokens.begin() + begin, global.tokens.begin() + end},
          {global.targets.begin() + begin, global.targets.begin() + end}};
}

DataParallelRank::DataParallelRank(comm::Communicator& comm, int64_t global_batch,
                                   WeightPolicy policy)
    : comm_(comm),
      global_batch_(global_batch),
      share_(uniform_batch_share(global_batch, comm.rank(), comm.size())),
      policy_(policy) {}

double DataParallelRank::all_reduce_gradients(Dispatcher& dispatcher, const Device& device,
                                              const Tensor& grads, double local_loss) {
  dispatcher.invoke_hook("comm.before_all_reduce", device);
  const TensorView view = grads.view();
  comm_.all_reduce(view, view, static_cast<uint64_t>(grads.numel()), grads.dtype(),
                   comm::ReduceOp::kSum);
  // The global mean is the rows-weighted mean of the ranks' means.
  double loss = local_loss * static_cast<double>(share_.rows) / static_cast<double>(global_batch_);
  comm_.all_reduce(&loss, &loss, 1, DType::kF64, comm::ReduceOp::kSum);
  return loss;
}

double DataParallelRank::agreed_grad_norm(double local_norm) {
  double norm = local_norm;
  comm_.broadcast(&norm, &norm, 1, DType::kF64, 0);
  return norm;
}

void DataParallelRank::agree_weights(const Tensor& params, const Tensor& adam_m,
                                     const Tensor& adam_v, int64_t step) {
  // FNV-1a 64 of the weights' bit patterns.
  const std::vector<float> values = params.to_vector<float>();
  std::vector<int32_t> bits(values.size());
  std::memcpy(bits.data(), values.data(), values.size() * sizeof(float));
  std::vector<int64_t> hashes(static_cast<size_t>(ranks()));
  hashes[static_cast<size_t>(rank())] = static_cast<int64_t>(corpus_hash(bits));
  comm_.all_gather(hashes.data() + rank(), hashes.data(), 1, DType::kI64);
  std::string differing;
  for (int r = 1; r < ranks(); ++r)
    if (hashes[static_cast<size_t>(r)] != hashes[0])
      differing += (differing.empty() ? "" : ", ") + std::to_string(r);
  if (differing.empty()) return;
  if (policy_ == WeightPolicy::kCheck)
    throw Error(StatusCode::kDataCorruption,
                "data parallelism: after step " + std::to_string(step) +
                    " the weights of rank(s) " + differing +
                    " differ from rank 0's (the ranks' AdamW updates are not bitwise identical; "
                    "--dp-weights sync takes rank 0's)");
  for (const Tensor* t : {&params, &adam_m, &adam_v}) {
    const TensorView view = t->view();
    comm_.broadcast(view, view, static_cast<uint64_t>(t->numel()), t->dtype(), 0);
  }
  ++weight_syncs_;
}

}  // namespace polychip::training
