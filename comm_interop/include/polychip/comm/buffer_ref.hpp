// A collective's buffer: a host pointer, or device memory of any adapter
// (a polychip::Buffer or TensorView). Device memory that is host visible is
// used in place; other device memory is staged through host buffers with
// the adapter's own copies.
#pragma once

#include <algorithm>
#include <cstdint>

#include "polychip/memory.hpp"
#include "polychip/tensor.hpp"

namespace polychip::comm {

class BufferRef {
 public:
  BufferRef(void* host) : host_(host) {}  // NOLINT: implicit from pointers on purpose
  BufferRef(const void* host) : host_(const_cast<void*>(host)) {}  // NOLINT
  BufferRef(const Buffer& buffer, uint64_t byte_offset = 0)        // NOLINT
      : device_(&buffer.device()),
        memory_(buffer.handle()),
        offset_(byte_offset),
        capacity_(buffer.size() >= byte_offset ? buffer.size() - byte_offset : 0) {}
  BufferRef(const TensorView& view)  // NOLINT
      : device_(&view.device()),
        memory_(view.memory()),
        offset_(view.byte_offset()),
        capacity_(UINT64_MAX) {}

  bool on_device() const { return device_ != nullptr; }
  void* host() const { return host_; }
  const Device* device() const { return device_; }
  polychip_memory* memory() const { return memory_; }
  uint64_t offset() const { return offset_; }
  // Bytes available from offset() (UINT64_MAX when unknown).
  uint64_t capacity() const { return capacity_; }
  // The same memory, `bytes` further in.
  BufferRef at(uint64_t bytes) const {
    BufferRef r = *this;
    if (on_device()) {
      r.offset_ += bytes;
      r.capacity_ = capacity_ == UINT64_MAX ? UINT64_MAX : capacity_ - std::min(bytes, capacity_);
    } else {
      r.host_ = static_cast<uint8_t*>(host_) + bytes;
    }
    return r;
  }
  bool same_memory(const BufferRef& o) const {
    return on_device() ? (o.memory_ == memory_ && o.offset_ == offset_) : o.host_ == host_;
  }

 private:
  void* host_ = nullptr;
  const Device* device_ = nullptr;
  polychip_memory* memory_ = nullptr;
  uint64_t offset_ = 0;
  uint64_t capacity_ = UINT64_MAX;
};

}  // namespace polychip::comm
