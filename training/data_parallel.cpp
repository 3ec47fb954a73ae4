#include "data_parallel.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "polychip/error.hpp"

namespace polychip::training {

std::vector<int64_t> uniform_split(int64_t global_batch, int ranks) {
  if (ranks < 1)
    throw Error(StatusCode::kInvalidArgument,
                "data parallelism: " + std::to_string(ranks) + " ranks; at least one is needed");
  if (global_batch < ranks)
    throw Error(StatusCode::kInvalidArgument,
                "data parallelism: a global batch of " + std::to_string(global_batch) +
                    " sequences cannot give each of " + std::to_string(ranks) + " ranks a row");
  const int64_t base = global_batch / ranks, extra = global_batch % ranks;
  std::vector<int64_t> split(static_cast<size_t>(ranks), base);
  for (int64_t r = 0; r < extra; ++r) ++split[static_cast<size_t>(r)];
  return split;
}

void check_split(const std::vector<int64_t>& split, int64_t global_batch, int ranks) {
  const auto refuse = [&](const std::string& why) {
    throw Error(StatusCode::kInvalidArgument, "--dp-split " + split_text(split) + ": " + why);
  };
  if (split.size() != static_cast<size_t>(ranks))
    refuse(std::to_string(split.size()) + (split.size() == 1 ? " entry" : " entries") + " for " +
           std::to_string(ranks) + " ranks; give one row count per rank, by ranks in order");
  int64_t sum = 0;  // saturates past global_batch: entries may be near INT64_MAX
  for (size_t r = 0; r < split.size(); ++r) {
    if (split[r] < 1)
      refuse("rank " + std::to_string(r) + " gets " + std::to_string(split[r]) +
             " rows; every rank needs at least one");
    sum = split[r] > global_batch - sum ? global_batch + 1 : sum + split[r];
  }
  if (sum != global_batch)
    refuse(
        "the rows sum to " +
        (sum > global_batch ? "more than " + std::to_string(global_batch) : std::to_string(sum)) +
        ", but the global batch (the preset's batch_size) is " + std::to_string(global_batch) +
        " rows; the row counts must sum to it");
}

std::vector<int64_t> parse_split(const std::string& text, int64_t global_batch, int ranks) {
  std::vector<int64_t> split;
  for (size_t begin = 0;;) {
    const size_t end = std::min(text.find(':', begin), text.size());
    const std::string entry = text.substr(begin, end - begin);
    int64_t rows = 0;
    const auto [last, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), rows);
    // Digits only: from_chars would take "-1", and "+1" or " 1" are no row counts either.
    if (entry.empty() || entry.find_first_not_of("0123456789") != std::string::npos ||
        ec != std::errc() || last != entry.data() + entry.size())
      throw Error(StatusCode::kInvalidArgument,
                  "--dp-split '" + text + "': entry " + std::to_string(split.size() + 1) + " ('" +
                      entry +
                      "') is not a whole number of rows; give the rows of each rank, by ranks "
                      "in order, as A:B[:C...]");
    split.push_back(rows);
    if (end == text.size()) break;
    begin = end + 1;
  }
  check_split(split, global_batch, ranks);
  return split;
}

std::string split_text(const std::vector<int64_t>& split) {
  std::string text;
  for (int64_t rows : split) text += (text.empty() ? "" : ":") + std::to_string(rows);
  return text;
}

BatchShare batch_share(const std::vector<int64_t>& split, int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= split.size())
    throw Error(StatusCode::kInvalidArgument,
                "data parallelism: rank " + std::to_string(rank) + " outside 0.." +
                    std::to_string(static_cast<int64_t>(split.size()) - 1));
  BatchShare share{.first_row = 0, .rows = split[static_cast<size_t>(rank)]};
  for (int r = 0; r < rank; ++r) share.first_row += split[static_cast<size_t>(r)];
  return share;
}

Batch batch_rows(const Batch& global, const BatchShare& share, int64_t seq_len) {
  const auto begin = static_cast<size_t>(share.first_row * seq_len);
  const auto end = static_cast<size_t>((share.first_row + share.rows) * seq_len);
  return {{global.tokens.begin() + begin, global.tokens.begin() + end},
          {global.targets.begin() + begin, global.targets.begin() + end}};
}

WeightPolicy parse_weight_policy(const std::string& text) {
  if (text == "shard") return WeightPolicy::kShard;
  if (text == "check") return WeightPolicy::kCheck;
  if (text == "sync") return WeightPolicy::kSyncFromRank0;
  throw Error(StatusCode::kInvalidArgument,
              "--dp-weights must be shard, check or sync, got '" + text + "'");
}

namespace {

std::vector<int64_t> rank_split(std::vector<int64_t> split, int64_t global_batch, int ranks) {
  if (split.empty()) return uniform_split(global_batch, ranks);
  check_split(split, global_batch, ranks);
  return split;
}

int checked_stages(int stages, int ranks) {
  if (stages < 1 || ranks % stages != 0)
    throw Error(StatusCode::kInvalidArgument,
                "pipeline: " + std::to_string(ranks) + " ranks are not whole pipelines of " +
                    std::to_string(stages) + " stages; give a rank count that the stages divide");
  return stages;
}

}  // namespace

DataParallelRank::DataParallelRank(comm::Communicator& comm, int64_t global_batch,
                                   WeightPolicy policy, std::vector<int64_t> split,
                                   int pipeline_stages)
    : comm_(comm),
      global_batch_(global_batch),
      stages_(checked_stages(pipeline_stages, comm.size())),
      split_(rank_split(std::move(split), global_batch, comm.size() / stages_)),
      share_(batch_share(split_, comm.rank() / stages_)),
      policy_(policy) {}

double DataParallelRank::global_loss(double local_loss) {
  const bool counted = stage() + 1 == stages_;
  double loss =
      counted ? local_loss * static_cast<double>(share_.rows) / static_cast<double>(global_batch_)
              : 0.0;
  comm_.all_reduce(&loss, &loss, 1, DType::kF64, comm::ReduceOp::kSum);
  return loss;
}

void DataParallelRank::all_reduce_gradients(const Tensor& grads) {
  const TensorView view = grads.view();
  comm_.all_reduce(view, view, static_cast<uint64_t>(grads.numel()), grads.dtype(),
                   comm::ReduceOp::kSum);
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
  if (differing.empty()) {
    ++identical_weight_steps_;
    return;
  }
  if (policy_ != WeightPolicy::kSyncFromRank0)
    throw Error(StatusCode::kDataCorruption,
                "data parallelism: after step " + std::to_string(step) +
                    " the weights of rank(s) " + differing + " differ from rank 0's" +
                    (policy_ == WeightPolicy::kShard
                         ? ", though the sharded optimizer gave every rank the same bits (memory "
                           "or transfer corruption on those ranks)"
                         : " (the ranks' AdamW updates are not bitwise identical; --dp-weights "
                           "sync takes rank 0's, shard shares one optimizer)"));
  for (const Tensor* t : {&params, &adam_m, &adam_v}) {
    const TensorView view = t->view();
    comm_.broadcast(view, view, static_cast<uint64_t>(t->numel()), t->dtype(), 0);
  }
  ++weight_syncs_;
}

}  // namespace polychip::training
