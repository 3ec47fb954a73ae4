// A collective as data: sends and receives between ranks, tagged by
// (kind, seq, step, chunk), with "after" edges so a chunk moves on as soon
// as the chunk it depends on arrived (pipelining). The transport runs it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/reduce_kernels.hpp"
#include "wire/wire.hpp"

namespace polychip::comm {

struct Task {
  bool is_send = false;
  int peer = -1;
  FrameKind kind = FrameKind::kCollective;
  uint64_t seq = 0;
  uint32_t step = 0;
  uint32_t chunk = 0;
  uint8_t* data = nullptr;  // send: source; receive: destination
  uint64_t bytes = 0;
  // Receive-and-reduce: data[i] = received[i] op local[i], piece by piece.
  const uint8_t* local = nullptr;
  ReduceFn reduce = nullptr;
  size_t element_size = 1;
  std::function<void()> on_complete;
  int unmet = 0;  // prerequisites not yet complete
  std::vector<int> dependents;
  bool done = false;
};

// "all_reduce(f32, count 1000, op sum)", "broadcast(bf16, count 8, root 1)".
std::string describe_call(const CallSignature& call);

class Plan {
 public:
  Plan(FrameKind kind, uint64_t seq, const char* name) : kind_(kind), seq_(seq), name_(name) {}
  int send(int peer, uint32_t step, uint32_t chunk, const void* src, uint64_t bytes) {
    Task t = base(peer, step, chunk, bytes);
    t.is_send = true;
    t.data = const_cast<uint8_t*>(static_cast<const uint8_t*>(src));
    return add(std::move(t));
  }
  int recv(int peer, uint32_t step, uint32_t chunk, void* dst, uint64_t bytes) {
    Task t = base(peer, step, chunk, bytes);
    t.data = static_cast<uint8_t*>(dst);
    return add(std::move(t));
  }
  int recv_reduce(int peer, uint32_t step, uint32_t chunk, void* dst, const void* local,
                  uint64_t bytes, ReduceFn fn, size_t element_size) {
    Task t = base(peer, step, chunk, bytes);
    t.data = static_cast<uint8_t*>(dst);
    t.local = static_cast<const uint8_t*>(local);
    t.reduce = fn;
    t.element_size = element_size;
    return add(std::move(t));
  }
  // `task` starts only after `prerequisite` completed (-1: no-op).
  void after(int task, int prerequisite) {
    if (prerequisite < 0) return;
    tasks_[prerequisite].dependents.push_back(task);
    ++tasks_[task].unmet;
  }
  void on_complete(int task, std::function<void()> fn) { tasks_[task].on_complete = std::move(fn); }
  // Called by the transport before it reads or writes a task's bytes (its
  // data, and the local operand of a receive-and-reduce): staged input that
  // is still being copied to the host is waited for here, range by range.
  using AccessFn = std::function<void(const uint8_t*, uint64_t)>;
  void set_before_access(AccessFn fn) { before_access_ = std::move(fn); }
  void before_access(const uint8_t* p, uint64_t n) const {
    if (before_access_) before_access_(p, n);
  }
  bool waits_before_access() const { return static_cast<bool>(before_access_); }
  // Point-to-point frames carry their own per-pair sequence number.
  void set_seq(int task, FrameKind kind, uint64_t seq) {
    tasks_[task].kind = kind;
    tasks_[task].seq = seq;
  }

  // Work that moves without frames (the GDR path's one-sided writes into
  // device memory), driven by the transport while it runs the plan: called
  // every turn until it returns true; `*moved` says it did something (the
  // transport then looks again without sleeping). Its deadline, aborts and
  // lost peers are the plan's. Progress that a lane's doorbell announces
  // (the shared-memory mailboxes) lets the transport sleep until it rings;
  // other progress is looked at every millisecond.
  using ProgressFn = std::function<bool(bool* moved)>;
  void set_progress(ProgressFn fn, bool announced_by_doorbell = false) {
    progress_ = std::move(fn);
    progress_announced_ = announced_by_doorbell;
  }
  bool has_progress() const { return static_cast<bool>(progress_); }
  bool progress_announced_by_doorbell() const { return progress_announced_; }
  bool progress(bool* moved) { return progress_(moved); }

  // The user's call this plan carries out, in every collective frame it sends.
  void set_call(const CallSignature& call) { call_ = call; }
  const CallSignature& call() const { return call_; }

  std::vector<Task>& tasks() { return tasks_; }
  FrameKind kind() const { return kind_; }
  uint64_t seq() const { return seq_; }
  const char* name() const { return name_; }
  bool empty() const { return tasks_.empty() && !progress_; }

 private:
  Task base(int peer, uint32_t step, uint32_t chunk, uint64_t bytes) const {
    Task t;
    t.peer = peer;
    t.kind = kind_;
    t.seq = seq_;
    t.step = step;
    t.chunk = chunk;
    t.bytes = bytes;
    return t;
  }
  int add(Task t) {
    tasks_.push_back(std::move(t));
    return static_cast<int>(tasks_.size()) - 1;
  }
  FrameKind kind_;
  uint64_t seq_;
  const char* name_;
  CallSignature call_;
  std::vector<Task> tasks_;
  AccessFn before_access_;
  ProgressFn progress_;
  bool progress_announced_ = false;
};

}  // namespace polychip::comm
