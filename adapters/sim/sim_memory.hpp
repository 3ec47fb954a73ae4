// Simulated device memory: pages mapped PROT_NONE, so the host cannot read
// or write them except inside the adapter's copies and kernels, which
// unlock the pages they touch for the duration (MemoryAccess, counted per
// page so overlapping users on several threads are safe, and a copy of a
// few pages of a large allocation costs a few pages' worth). Pinned host
// memory is ordinary read-write memory.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

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
  // The NIC's view (memory_export): from now on the whole allocation stays
  // readable and writable until it is unmapped, as GPUDirect RDMA pins an
  // allocation's pages for the NIC; the host-side guard is gone for this
  // allocation only. Returns base().
  char* export_to_network();

 private:
  friend class MemoryAccess;
  // Bytes [offset, offset + size), widened to whole pages.
  void unlock(uint64_t offset, uint64_t size);
  void lock(uint64_t offset, uint64_t size);
  // Sets `prot` on the pages in [first, last) whose count moved to or from zero.
  void protect_changed(uint64_t first, uint64_t last, bool unlocking);

  int device_;
  polychip_memory_kind kind_;
  uint64_t size_;
  uint64_t mapped_ = 0;
  char* base_ = nullptr;
  uint64_t page_ = 0;
  std::mutex mutex_;
  std::vector<uint32_t> users_;  // per page
  bool exported_ = false;        // guarded by mutex_
};

// Makes device memory readable and writable for its lifetime.
class MemoryAccess {
 public:
  MemoryAccess() = default;
  explicit MemoryAccess(SimMemory* m) { add(m); }
  ~MemoryAccess();
  MemoryAccess(const MemoryAccess&) = delete;
  MemoryAccess& operator=(const MemoryAccess&) = delete;
  // Unlocks [offset, offset + size) of m (all of it by default) until the
  // MemoryAccess ends.
  void add(SimMemory* m, uint64_t offset = 0, uint64_t size = UINT64_MAX);

 private:
  static constexpr int kMax = POLYCHIP_MAX_OP_TENSORS + 2;
  struct Held {
    SimMemory* memory;
    uint64_t offset, size;
  };
  Held held_[kMax] = {};
  int count_ = 0;
};

}  // namespace polychip::sim
