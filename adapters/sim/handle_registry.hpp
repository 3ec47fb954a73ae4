// The live handles of one kind: every ABI call looks its handle up here,
// so a stale, foreign or forged handle is an error instead of a crash, and
// work queued on a stream keeps what it uses alive (shared ownership).
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>

namespace polychip::sim {

template <class T>
class HandleRegistry {
 public:
  T* add(std::shared_ptr<T> object) {
    T* raw = object.get();
    std::lock_guard lock(mutex_);
    live_.emplace(raw, std::move(object));
    return raw;
  }
  // nullptr when `handle` is not live.
  std::shared_ptr<T> find(const void* handle) const {
    std::lock_guard lock(mutex_);
    auto it = live_.find(static_cast<const T*>(handle));
    return it == live_.end() ? nullptr : it->second;
  }
  std::shared_ptr<T> remove(const void* handle) {
    std::lock_guard lock(mutex_);
    auto it = live_.find(static_cast<const T*>(handle));
    if (it == live_.end()) return nullptr;
    auto object = std::move(it->second);
    live_.erase(it);
    return object;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<const T*, std::shared_ptr<T>> live_;
};

}  // namespace polychip::sim
