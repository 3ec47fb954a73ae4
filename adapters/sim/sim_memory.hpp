// Simulated device memory: pages mapped PROT_NONE, so the host cannot read
// or write them except inside the adapter's copies and kernels, which
// unlock them for the duration (MemoryAccess, reference-counted so
// overlapping users on several threads are safe). Pinned host memory is
// ordinary read-write memory.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "polychip/adapter_abi.h"

namespace polychip::sim {

class SimMemory {
 public:
  // Maps `size` bytes; throws std::bad_alloc when the mapping fails.
  SimMemory(int device, polychip_memory_kind kind, uint64_t size);
  ~SimMemory();
  SimMemory(const SimMemory&) = delete;
  SimMemory& operator=(const SimMemory&) = delete;

  int device() const { return device_; }
  polychip_memory_kind kind() const { return kind_; }
  uint64_t size() const { return size_; }
  // The mapping's address. Touching device memory outside a MemoryAccess
  // faults (SIGSEGV): that is the point.
  char* base() const { return base_; }

 private:
  friend class MemoryAccess;
  void unlock();
  void lock();

  int device_;
  polychip_memory_kind kind_;
  uint64_t size_;
  uint64_t mapped_ = 0;
  char* base_ = nullptr;
  std::mutex mutex_;
  int users_ = 0;
};

// Makes device memory readable and writable for its lifetime.
class MemoryAccess {
 public:
  MemoryAccess() = default;
  explicit MemoryAccess(SimMemory* m) { add(m); }
  ~MemoryAccess();
  MemoryAccess(const MemoryAccess&) = delete;
  MemoryAccess& operator=(const MemoryAccess&) = delete;
  // Unlocks m (once per MemoryAccess, whatever the number of calls).
  void add(SimMemory* m);

 private:
  static constexpr int kMax = POLYCHIP_MAX_OP_TENSORS + 2;
  SimMemory* held_[kMax] = {};
  int count_ = 0;
};

}  // namespace polychip::sim
