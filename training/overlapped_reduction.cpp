#include "overlapped_reduction.hpp"

#include <algorithm>
#include <string>

#include "polychip/error.hpp"

namespace polychip::training {

OverlappedReduction::OverlappedReduction(comm::Communicator& comm, int64_t total,
                                         int64_t shard_size)
    : comm_(comm),
      total_(total),
      shard_size_(shard_size),
      staged_(static_cast<size_t>(total)),
      own_(static_cast<size_t>(shard_size)),
      thread_([this] { run(); }) {}

OverlappedReduction::~OverlappedReduction() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void OverlappedReduction::begin() {
  std::lock_guard lock(mutex_);
  std::fill(own_.begin(), own_.end(), 0.0f);
  covered_ = 0;
  error_ = nullptr;
}

void OverlappedReduction::add_region(const Tensor& grads, int64_t begin, int64_t end) {
  if (grads.numel() != total_ || grads.dtype() != DType::kF32 || begin < 0 || end > total_ ||
      begin >= end)
    throw Error(StatusCode::kInvalidArgument,
                "overlapped reduction: region [" + std::to_string(begin) + ", " +
                    std::to_string(end) + ") of " + std::to_string(total_) + " fp32 gradients");
  grads.buffer().copy_to_host(staged_.data() + begin,
                              static_cast<uint64_t>(end - begin) * sizeof(float),
                              static_cast<uint64_t>(begin) * sizeof(float));
  {
    std::lock_guard lock(mutex_);
    queue_.emplace_back(begin, end);
    covered_ += end - begin;
  }
  cv_.notify_all();
}

const std::vector<float>& OverlappedReduction::finish() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
  if (error_) std::rethrow_exception(error_);
  if (covered_ != total_)
    throw Error(StatusCode::kInvalidArgument, "overlapped reduction: the regions covered " +
                                                  std::to_string(covered_) + " of " +
                                                  std::to_string(total_) + " gradients");
  return own_;
}

void OverlappedReduction::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    // Stopping: a step that did not finish (an error unwinding the trainer)
    // leaves its regions unsummed.
    if (stopping_) return;
    const auto [begin, end] = queue_.front();
    queue_.pop_front();
    busy_ = true;
    const bool failed = error_ != nullptr;
    lock.unlock();
    try {
      if (!failed) reduce(begin, end);  // after an error, the rest is drained unsummed
    } catch (...) {
      lock.lock();
      error_ = std::current_exception();
      lock.unlock();
    }
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

// The region's piece in each owner's shard, summed to that owner.
void OverlappedReduction::reduce(int64_t begin, int64_t end) {
  const int me = comm_.rank();
  for (int owner = 0; owner < comm_.size(); ++owner) {
    const int64_t shard_begin = owner * shard_size_;
    const int64_t lo = std::max(begin, shard_begin), hi = std::min(end, shard_begin + shard_size_);
    if (lo >= hi) continue;
    float* send = staged_.data() + lo;
    float* recv = owner == me ? own_.data() + (lo - shard_begin) : send;
    comm_.reduce(send, recv, static_cast<uint64_t>(hi - lo), DType::kF32, comm::ReduceOp::kSum,
                 owner);
  }
}

}  // namespace polychip::training
