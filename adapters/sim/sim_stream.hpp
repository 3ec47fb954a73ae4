// Simulated streams and events. A stream is a worker thread running its
// tasks in submission order (copies on a stream really overlap the host);
// kernels drain the stream and then run on the caller's thread, so order
// is kept and kernel errors are reported by the launching call. An event
// records the time its stream reached it.
//
// A slowed or modelled-speed device (sim_profiles.hpp) also keeps a device
// timeline: each kernel, once run, occupies the device for its modelled time
// from when the device is free (or from its launch, if later). The host runs
// ahead of the timeline by at most kRunAhead, as it runs ahead of a real
// device's queue, so the host's own work overlaps the device's; copies,
// event records and stream_synchronize come after the timeline's end.
// Waits are for points on the timeline, so a late wake-up is made up by the
// kernels after it rather than added to the total.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace polychip::sim {

using Clock = std::chrono::steady_clock;

// sleep_until with a 1 µs timer slack on the calling thread.
void sleep_until_precisely(Clock::time_point when);

class SimEvent {
 public:
  explicit SimEvent(int device) : device_(device) {}
  int device() const { return device_; }

  // A new recording; returns its generation (completed by complete()).
  uint64_t begin_record();
  void complete(uint64_t generation);
  bool recorded() const;
  bool is_complete() const;
  // Waits until recording `generation` (0: the latest) completes.
  void wait(uint64_t generation = 0) const;
  uint64_t generation() const;
  // The completion time of the latest recording (recorded and complete).
  Clock::time_point when() const;

 private:
  const int device_;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  uint64_t recorded_ = 0;   // generation of the latest record
  uint64_t completed_ = 0;  // highest completed generation
  Clock::time_point when_{};
};

class SimStream {
 public:
  explicit SimStream(int device);
  ~SimStream();  // drains, then joins the worker
  SimStream(const SimStream&) = delete;
  SimStream& operator=(const SimStream&) = delete;

  int device() const { return device_; }
  void enqueue(std::function<void()> task);
  // `task` after the timeline's end (then enqueue's order).
  void enqueue_after_kernels(std::function<void()> task);
  // Returns when every task enqueued so far has run.
  void synchronize();

  // The timeline: a kernel launched at `launched` occupies the device for
  // `device_time`; returns once the host is no more than kRunAhead ahead.
  void add_kernel_time(Clock::time_point launched, Clock::duration device_time);
  // When the device finishes the kernels launched so far.
  Clock::time_point kernels_end() const;
  static constexpr std::chrono::microseconds kRunAhead{2000};

 private:
  void run();

  const int device_;
  std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<std::function<void()>> tasks_;
  bool busy_ = false;
  bool stopping_ = false;
  mutable std::mutex timeline_mutex_;
  Clock::time_point kernels_end_{};
  std::thread worker_;
};

}  // namespace polychip::sim
