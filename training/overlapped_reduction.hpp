// The gradient reduction overlapped with the backward pass (--dp-overlap):
// as the backward pass finishes a region of the flat fp32 gradient (a
// block's parameters, say), the region is copied to the host and a
// communication thread sums it over the ranks into the owners of the shards
// it crosses (one reduce per owner, ShardedAdamW's shard layout), while
// the backward pass goes on. Every rank hands over the same regions in the
// same order, so the thread's collectives match across ranks; the main
// thread calls no collective between begin() and finish().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "polychip/comm/communicator.hpp"
#include "polychip/tensor.hpp"

namespace polychip::training {

class OverlappedReduction {
 public:
  // `total` gradient elements in shards of `shard_size` (the last padded).
  OverlappedReduction(comm::Communicator& comm, int64_t total, int64_t shard_size);
  ~OverlappedReduction();  // waits for the region in hand, drops the rest
  OverlappedReduction(const OverlappedReduction&) = delete;
  OverlappedReduction& operator=(const OverlappedReduction&) = delete;

  // A step's reduction starts: no region handed over yet.
  void begin();
  // Elements [begin, end) of `grads` (fp32, total elements) are final: their
  // device work must be complete (the caller synchronized the stream).
  void add_region(const Tensor& grads, int64_t begin, int64_t end);
  // Waits until every region is summed; this rank's shard of the sum
  // (shard_size values, the padding 0). Rethrows the thread's error, and
  // INVALID_ARGUMENT unless the regions covered every element once.
  const std::vector<float>& finish();

 private:
  void run();
  void reduce(int64_t begin, int64_t end);

  comm::Communicator& comm_;
  const int64_t total_, shard_size_;
  std::vector<float> staged_;  // the whole gradient, as the regions arrive
  std::vector<float> own_;     // this rank's shard of the sum
  int64_t covered_ = 0;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::pair<int64_t, int64_t>> queue_;
  bool busy_ = false, stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace polychip::training
