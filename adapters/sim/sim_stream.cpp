#include "sim_stream.hpp"

#include <sys/prctl.h>

#include <algorithm>

namespace polychip::sim {

void sleep_until_precisely(Clock::time_point when) {
  // A sleep ends up to the thread's timer slack late (50 µs by default):
  // the sleeping threads ask for 1 µs.
  thread_local const bool fine_timer_slack = prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) == 0;
  (void)fine_timer_slack;
  std::this_thread::sleep_until(when);
}

uint64_t SimEvent::begin_record() {
  std::lock_guard lock(mutex_);
  return ++recorded_;
}

void SimEvent::complete(uint64_t generation) {
  {
    std::lock_guard lock(mutex_);
    if (generation > completed_) {
      completed_ = generation;
      when_ = Clock::now();
    }
  }
  cv_.notify_all();
}

bool SimEvent::recorded() const {
  std::lock_guard lock(mutex_);
  return recorded_ > 0;
}

bool SimEvent::is_complete() const {
  std::lock_guard lock(mutex_);
  return completed_ >= recorded_;
}

void SimEvent::wait(uint64_t generation) const {
  std::unique_lock lock(mutex_);
  const uint64_t target = generation ? generation : recorded_;
  cv_.wait(lock, [&] { return completed_ >= target; });
}

uint64_t SimEvent::generation() const {
  std::lock_guard lock(mutex_);
  return recorded_;
}

Clock::time_point SimEvent::when() const {
  std::lock_guard lock(mutex_);
  return when_;
}

SimStream::SimStream(int device) : device_(device), worker_([this] { run(); }) {}

SimStream::~SimStream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

void SimStream::enqueue(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  work_cv_.notify_one();
}

void SimStream::enqueue_after_kernels(std::function<void()> task) {
  const Clock::time_point end = kernels_end();
  if (end > Clock::now()) enqueue([end] { sleep_until_precisely(end); });
  enqueue(std::move(task));
}

void SimStream::add_kernel_time(Clock::time_point launched, Clock::duration device_time) {
  Clock::time_point host_may_run_to;
  {
    std::lock_guard lock(timeline_mutex_);
    kernels_end_ = std::max(kernels_end_, launched) + device_time;
    host_may_run_to = kernels_end_ - kRunAhead;
  }
  if (host_may_run_to > Clock::now()) sleep_until_precisely(host_may_run_to);
}

Clock::time_point SimStream::kernels_end() const {
  std::lock_guard lock(timeline_mutex_);
  return kernels_end_;
}

void SimStream::synchronize() {
  std::unique_lock lock(mutex_);
  idle_cv_.wait(lock, [&] { return tasks_.empty() && !busy_; });
}

void SimStream::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping and drained
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;
    lock.unlock();
    task();
    lock.lock();
    busy_ = false;
    if (tasks_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace polychip::sim
