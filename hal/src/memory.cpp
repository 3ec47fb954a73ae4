#include "polychip/memory.hpp"

#include <utility>

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip {
namespace {

void require_device(const Device& d, const char* what) {
  if (!d.valid())
    throw_error(StatusCode::kFailedPrecondition, fmt::format("{} on an empty handle", what));
}

void check_range(uint64_t offset, uint64_t size, uint64_t capacity, const char* what) {
  if (offset > capacity || size > capacity - offset)
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("{}: bytes [{}, {}) are outside the buffer of {} bytes", what, offset,
                            offset + size, capacity));
}

polychip_stream* stream_handle(const Stream* s, const Device& d, const char* what) {
  if (!s) return nullptr;
  if (!(s->device() == d))
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("{}: the stream is on {} but the buffer is on {}", what,
                            s->device().label(), d.label()));
  return s->handle();
}

}  // namespace

// ---- Buffer -----------------------------------------------------------------

Buffer::Buffer(const Device& device, uint64_t size_bytes, MemoryKind kind)
    : device_(device), size_(size_bytes), kind_(kind) {
  require_device(device, "Buffer allocation");
  polychip_memory_allocate_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_memory_allocate_args, memory);
  a.device = device.index();
  a.kind = static_cast<polychip_memory_kind>(kind);
  a.size_bytes = size_bytes;
  device.check(device.api().memory_allocate(&a), "memory_allocate");
  memory_ = a.memory;
}

Buffer::~Buffer() { reset(); }

Buffer::Buffer(Buffer&& o) noexcept
    : device_(o.device_),
      memory_(std::exchange(o.memory_, nullptr)),
      size_(o.size_),
      kind_(o.kind_) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = o.device_;
    memory_ = std::exchange(o.memory_, nullptr);
    size_ = o.size_;
    kind_ = o.kind_;
  }
  return *this;
}

void Buffer::reset() noexcept {
  if (!memory_) return;
  polychip_memory_free_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_memory_free_args, memory);
  a.memory = memory_;
  device_.api().memory_free(&a);  // a destructor cannot report; adapters log
  memory_ = nullptr;
}

void* Buffer::host_pointer() const {
  require_device(device_, "host_pointer");
  polychip_memory_host_pointer_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_memory_host_pointer_args, host_pointer);
  a.memory = memory_;
  device_.check(device_.api().memory_host_pointer(&a), "memory_host_pointer");
  return a.host_pointer;
}

const char* memory_interface_name(polychip_memory_interface interface) {
  switch (interface) {
    case POLYCHIP_MEMORY_INTERFACE_SYSTEM:
      return "system";
    case POLYCHIP_MEMORY_INTERFACE_CUDA:
      return "cuda";
    case POLYCHIP_MEMORY_INTERFACE_ROCR:
      return "rocr";
    case POLYCHIP_MEMORY_INTERFACE_ZE:
      return "ze";
    case POLYCHIP_MEMORY_INTERFACE_DMABUF:
      return "dmabuf";
  }
  return "unknown";
}

NetworkMemory network_export(const Device& device, polychip_memory* memory, uint64_t at_least) {
  require_device(device, "network_export");
  const polychip_adapter_api& api = device.api();
  if (api.struct_size < POLYCHIP_ADAPTER_API_STRUCT_SIZE_V1_1 || !api.memory_export)
    throw_error(StatusCode::kUnsupported,
                fmt::format("{} ({}) cannot export memory to a NIC: adapter '{}' has ABI {}.{} "
                            "without memory_export (added in 1.1)",
                            device.label(), device.device_type(), device.adapter_name(),
                            api.abi_version.major, api.abi_version.minor));
  polychip_memory_export_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_memory_export_args, dmabuf_offset);
  a.memory = memory;
  a.dmabuf_fd = -1;
  device.check(api.memory_export(&a), "memory_export");
  if (a.interface < POLYCHIP_MEMORY_INTERFACE_SYSTEM ||
      a.interface > POLYCHIP_MEMORY_INTERFACE_DMABUF)
    throw_error(StatusCode::kInternal,
                fmt::format("{}: memory_export returned unknown memory interface {}",
                            device.label(), a.interface));
  if (a.size_bytes < at_least ||
      (a.interface == POLYCHIP_MEMORY_INTERFACE_DMABUF ? a.dmabuf_fd < 0
                                                       : (a.address == nullptr && at_least > 0)))
    throw_error(StatusCode::kInternal,
                fmt::format("{}: memory_export described {} bytes at {} (fd {}) for an allocation "
                            "of {} bytes",
                            device.label(), a.size_bytes, a.address, a.dmabuf_fd, at_least));
  return {a.interface, a.device_ordinal, a.address, a.size_bytes, a.dmabuf_fd, a.dmabuf_offset};
}

NetworkMemory Buffer::network_export() const {
  return polychip::network_export(device_, memory_, size_);
}

static polychip_copy_args copy_args(polychip_copy_kind kind, uint64_t size, polychip_stream* s) {
  polychip_copy_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_copy_args, stream);
  a.kind = kind;
  a.size_bytes = size;
  a.stream = s;
  return a;
}

void Buffer::copy_from_host(const void* src, uint64_t size, uint64_t offset, const Stream* stream) {
  require_device(device_, "copy_from_host");
  check_range(offset, size, size_, "copy_from_host");
  if (size && !src) throw_error(StatusCode::kInvalidArgument, "copy_from_host: source is null");
  auto a = copy_args(POLYCHIP_COPY_HOST_TO_DEVICE, size,
                     stream_handle(stream, device_, "copy_from_host"));
  a.src_host = src;
  a.dst_memory = memory_;
  a.dst_offset = offset;
  device_.check(device_.api().copy(&a), "copy (host to device)");
}

void Buffer::copy_to_host(void* dst, uint64_t size, uint64_t offset, const Stream* stream) const {
  require_device(device_, "copy_to_host");
  check_range(offset, size, size_, "copy_to_host");
  if (size && !dst) throw_error(StatusCode::kInvalidArgument, "copy_to_host: destination is null");
  auto a =
      copy_args(POLYCHIP_COPY_DEVICE_TO_HOST, size, stream_handle(stream, device_, "copy_to_host"));
  a.src_memory = memory_;
  a.src_offset = offset;
  a.dst_host = dst;
  device_.check(device_.api().copy(&a), "copy (device to host)");
}

void Buffer::copy_from(const Buffer& src, uint64_t size, uint64_t src_offset, uint64_t dst_offset,
                       const Stream* stream) {
  require_device(device_, "copy_from");
  if (&src.device_.api() != &device_.api())
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("copy_from: {} and {} belong to different adapters; copy through the "
                            "host",
                            src.device_.label(), device_.label()));
  check_range(src_offset, size, src.size_, "copy_from (source)");
  check_range(dst_offset, size, size_, "copy_from (destination)");
  auto a =
      copy_args(POLYCHIP_COPY_DEVICE_TO_DEVICE, size, stream_handle(stream, device_, "copy_from"));
  a.src_memory = src.memory_;
  a.src_offset = src_offset;
  a.dst_memory = memory_;
  a.dst_offset = dst_offset;
  device_.check(device_.api().copy(&a), "copy (device to device)");
}

// ---- Stream -----------------------------------------------------------------

Stream::Stream(const Device& device) : device_(device) {
  require_device(device, "Stream creation");
  polychip_stream_create_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_stream_create_args, stream);
  a.device = device.index();
  device.check(device.api().stream_create(&a), "stream_create");
  stream_ = a.stream;
}

Stream::~Stream() { reset(); }
Stream::Stream(Stream&& o) noexcept
    : device_(o.device_), stream_(std::exchange(o.stream_, nullptr)) {}
Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = o.device_;
    stream_ = std::exchange(o.stream_, nullptr);
  }
  return *this;
}

void Stream::reset() noexcept {
  if (!stream_) return;
  polychip_stream_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_stream_args, stream);
  a.stream = stream_;
  device_.api().stream_destroy(&a);
  stream_ = nullptr;
}

void Stream::synchronize() const {
  require_device(device_, "Stream::synchronize");
  polychip_stream_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_stream_args, stream);
  a.stream = stream_;
  device_.check(device_.api().stream_synchronize(&a), "stream_synchronize");
}

// ---- Event ------------------------------------------------------------------

static polychip_event_args event_args(polychip_event* e, polychip_stream* s) {
  polychip_event_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_event_args, complete);
  a.event = e;
  a.stream = s;
  return a;
}

Event::Event(const Device& device) : device_(device) {
  require_device(device, "Event creation");
  polychip_event_create_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_event_create_args, event);
  a.device = device.index();
  device.check(device.api().event_create(&a), "event_create");
  event_ = a.event;
}

Event::~Event() { reset(); }
Event::Event(Event&& o) noexcept : device_(o.device_), event_(std::exchange(o.event_, nullptr)) {}
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = o.device_;
    event_ = std::exchange(o.event_, nullptr);
  }
  return *this;
}

void Event::reset() noexcept {
  if (!event_) return;
  auto a = event_args(event_, nullptr);
  device_.api().event_destroy(&a);
  event_ = nullptr;
}

void Event::record(const Stream& stream) {
  require_device(device_, "Event::record");
  auto a = event_args(event_, stream_handle(&stream, device_, "Event::record"));
  device_.check(device_.api().event_record(&a), "event_record");
}

void Event::wait_on(const Stream& stream) const {
  require_device(device_, "Event::wait_on");
  auto a = event_args(event_, stream_handle(&stream, device_, "Event::wait_on"));
  device_.check(device_.api().stream_wait_event(&a), "stream_wait_event");
}

bool Event::query() const {
  require_device(device_, "Event::query");
  auto a = event_args(event_, nullptr);
  device_.check(device_.api().event_query(&a), "event_query");
  return a.complete != 0;
}

void Event::synchronize() const {
  require_device(device_, "Event::synchronize");
  auto a = event_args(event_, nullptr);
  device_.check(device_.api().event_synchronize(&a), "event_synchronize");
}

double Event::elapsed_ms(const Event& start, const Event& end) {
  require_device(start.device_, "Event::elapsed_ms");
  if (!(start.device_ == end.device_))
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("elapsed_ms: events on different devices ({} and {})",
                            start.device_.label(), end.device_.label()));
  polychip_event_elapsed_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_event_elapsed_args, milliseconds);
  a.start = start.event_;
  a.end = end.event_;
  start.device_.check(start.device_.api().event_elapsed(&a), "event_elapsed");
  return a.milliseconds;
}

}  // namespace polychip
