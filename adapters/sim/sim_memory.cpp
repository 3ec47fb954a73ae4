#include "sim_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <stdexcept>

namespace polychip::sim {
namespace {

uint64_t page_rounded(uint64_t size) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}

}  // namespace

SimMemory::SimMemory(int device, polychip_memory_kind kind, uint64_t size)
    : device_(device), kind_(kind), size_(size) {
  if (size == 0) return;  // a distinct handle with no pages
  mapped_ = page_rounded(size);
  const int prot = kind == POLYCHIP_MEMORY_DEVICE ? PROT_NONE : PROT_READ | PROT_WRITE;
  void* p = mmap(nullptr, mapped_, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  base_ = static_cast<char*>(p);
}

SimMemory::~SimMemory() {
  if (base_) munmap(base_, mapped_);
}

void SimMemory::unlock() {
  if (kind_ != POLYCHIP_MEMORY_DEVICE || !base_) return;
  std::lock_guard lock(mutex_);
  if (users_++ == 0 && mprotect(base_, mapped_, PROT_READ | PROT_WRITE) != 0)
    throw std::runtime_error("sim: mprotect failed to unlock device memory");
}

void SimMemory::lock() {
  if (kind_ != POLYCHIP_MEMORY_DEVICE || !base_) return;
  std::lock_guard lock(mutex_);
  if (--users_ == 0) mprotect(base_, mapped_, PROT_NONE);
}

void MemoryAccess::add(SimMemory* m) {
  if (!m) return;
  for (int k = 0; k < count_; ++k)
    if (held_[k] == m) return;
  if (count_ == kMax) throw std::logic_error("sim: MemoryAccess holds too many memories");
  m->unlock();
  held_[count_++] = m;
}

MemoryAccess::~MemoryAccess() {
  for (int k = 0; k < count_; ++k) held_[k]->lock();
}

}  // namespace polychip::sim
