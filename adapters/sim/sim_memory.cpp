#include "sim_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <stdexcept>

namespace polychip::sim {
namespace {

uint64_t page_size() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

}  // namespace

SimMemory::SimMemory(int device, polychip_memory_kind kind, uint64_t size)
    : device_(device), kind_(kind), size_(size) {
  if (size == 0) return;  // a distinct handle with no pages
  page_ = page_size();
  mapped_ = (size + page_ - 1) / page_ * page_;
  const int prot = kind == POLYCHIP_MEMORY_DEVICE ? PROT_NONE : PROT_READ | PROT_WRITE;
  void* p = mmap(nullptr, mapped_, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  base_ = static_cast<char*>(p);
  if (kind == POLYCHIP_MEMORY_DEVICE) users_.assign(mapped_ / page_, 0);
}

SimMemory::~SimMemory() {
  if (base_) munmap(base_, mapped_);
}

void SimMemory::protect_changed(uint64_t first, uint64_t last, bool unlocking) {
  // Runs of pages whose count just left (or reached) zero, one mprotect each.
  uint64_t p = first;
  while (p < last) {
    const bool flips = unlocking ? users_[p]++ == 0 : --users_[p] == 0;
    if (!flips) {
      ++p;
      continue;
    }
    uint64_t end = p + 1;
    while (end < last && (unlocking ? users_[end] == 0 : users_[end] == 1)) {
      unlocking ? ++users_[end] : --users_[end];
      ++end;
    }
    const int prot = unlocking ? PROT_READ | PROT_WRITE : PROT_NONE;
    if (mprotect(base_ + p * page_, (end - p) * page_, prot) != 0 && unlocking)
      throw std::runtime_error("sim: mprotect failed to unlock device memory");
    p = end;
  }
}

void SimMemory::unlock(uint64_t offset, uint64_t size) {
  if (kind_ != POLYCHIP_MEMORY_DEVICE || !base_ || size == 0 || offset >= size_) return;
  const uint64_t end = size > size_ - offset ? size_ : offset + size;
  std::lock_guard lock(mutex_);
  protect_changed(offset / page_, (end + page_ - 1) / page_, true);
}

char* SimMemory::export_to_network() {
  if (kind_ != POLYCHIP_MEMORY_DEVICE || !base_) return base_;
  std::lock_guard lock(mutex_);
  if (!exported_) protect_changed(0, mapped_ / page_, true);  // a user that never leaves
  exported_ = true;
  return base_;
}

void SimMemory::lock(uint64_t offset, uint64_t size) {
  if (kind_ != POLYCHIP_MEMORY_DEVICE || !base_ || size == 0 || offset >= size_) return;
  const uint64_t end = size > size_ - offset ? size_ : offset + size;
  std::lock_guard lock(mutex_);
  protect_changed(offset / page_, (end + page_ - 1) / page_, false);
}

void MemoryAccess::add(SimMemory* m, uint64_t offset, uint64_t size) {
  if (!m) return;
  if (count_ == kMax) throw std::logic_error("sim: MemoryAccess holds too many memories");
  m->unlock(offset, size);
  held_[count_++] = {m, offset, size};
}

MemoryAccess::~MemoryAccess() {
  for (int k = 0; k < count_; ++k) held_[k].memory->lock(held_[k].offset, held_[k].size);
}

}  // namespace polychip::sim
