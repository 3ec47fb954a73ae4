// RAII wrappers over adapter handles: Buffer (device or pinned host memory),
// Stream, Event. Each owns its handle and frees it through the adapter.
#pragma once

#include <cstdint>

#include "polychip/device.hpp"

namespace polychip {

class Stream;

enum class MemoryKind {
  kDevice = POLYCHIP_MEMORY_DEVICE,
  kPinnedHost = POLYCHIP_MEMORY_PINNED_HOST
};

// An allocation as a NIC sees it (adapter ABI 1.1, memory_export): what
// libfabric registers for GPUDirect RDMA.
struct NetworkMemory {
  polychip_memory_interface interface = POLYCHIP_MEMORY_INTERFACE_SYSTEM;
  int device_ordinal = 0;
  void* address = nullptr;
  uint64_t size = 0;
  int dmabuf_fd = -1;  // DMABUF only; owned by the adapter
  uint64_t dmabuf_offset = 0;
};

// "system", "cuda", "rocr", "ze", "dmabuf".
const char* memory_interface_name(polychip_memory_interface interface);

// How a NIC can write `memory` of `device` (Buffer::network_export for a
// handle that no Buffer owns, e.g. a tensor view's); `at_least` bytes must
// be described. UNSUPPORTED, naming the device and why, when its adapter
// cannot export (an ABI 1.0 table cannot).
NetworkMemory network_export(const Device& device, polychip_memory* memory, uint64_t at_least);

class Buffer {
 public:
  Buffer() = default;
  Buffer(const Device& device, uint64_t size_bytes, MemoryKind kind = MemoryKind::kDevice);
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const Device& device() const { return device_; }
  uint64_t size() const { return size_; }
  MemoryKind kind() const { return kind_; }
  polychip_memory* handle() const { return memory_; }
  // Throws UNSUPPORTED when the memory is not host visible.
  void* host_pointer() const;
  // How a NIC can write this allocation directly; UNSUPPORTED, naming the
  // device and why, when its adapter cannot export it (an ABI 1.0 table
  // cannot).
  NetworkMemory network_export() const;

  // Copies with bounds checks. stream == nullptr: synchronous.
  void copy_from_host(const void* src, uint64_t size, uint64_t offset = 0,
                      const Stream* stream = nullptr);
  void copy_to_host(void* dst, uint64_t size, uint64_t offset = 0,
                    const Stream* stream = nullptr) const;
  // Same adapter only; cross-adapter copies go through the host (see
  // copy_between_devices in tensor.hpp).
  void copy_from(const Buffer& src, uint64_t size, uint64_t src_offset = 0, uint64_t dst_offset = 0,
                 const Stream* stream = nullptr);

 private:
  void reset() noexcept;
  Device device_;
  polychip_memory* memory_ = nullptr;
  uint64_t size_ = 0;
  MemoryKind kind_ = MemoryKind::kDevice;
};

class Stream {
 public:
  Stream() = default;
  explicit Stream(const Device& device);
  ~Stream();
  Stream(Stream&& o) noexcept;
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  const Device& device() const { return device_; }
  polychip_stream* handle() const { return stream_; }
  void synchronize() const;

 private:
  void reset() noexcept;
  Device device_;
  polychip_stream* stream_ = nullptr;
};

class Event {
 public:
  Event() = default;
  explicit Event(const Device& device);
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& stream);
  // Work queued on `stream` after this call waits for the event.
  void wait_on(const Stream& stream) const;
  bool query() const;
  void synchronize() const;
  // Milliseconds between two recorded events of the same device.
  static double elapsed_ms(const Event& start, const Event& end);
  polychip_event* handle() const { return event_; }

 private:
  void reset() noexcept;
  Device device_;
  polychip_event* event_ = nullptr;
};

}  // namespace polychip
