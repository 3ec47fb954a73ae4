// The cpu adapter's runtime: memory, copies, streams and events. Its kernels
// live in kernels/ (one table, shared with adapters that reuse them).
#include "cpu_adapter.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include <fmt/format.h>
#include <unistd.h>

#include "abi_struct_size.hpp"

namespace polychip::cpu {
namespace {

thread_local std::string g_last_error;

// Work on a cpu stream runs synchronously, so a stream only needs to exist.
struct StreamImpl {
  int device;
};
struct EventImpl {
  int device;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
};

StreamImpl* as_stream(polychip_stream* s) { return reinterpret_cast<StreamImpl*>(s); }
EventImpl* as_event(polychip_event* e) { return reinterpret_cast<EventImpl*>(e); }

polychip_status check_device(int device) {
  if (device != 0)
    return fail(POLYCHIP_NOT_FOUND, fmt::format("cpu has one device (0), not {}", device));
  return POLYCHIP_OK;
}

template <typename Args>
polychip_status check_args(const Args* a, const char* call) {
  return check_args_struct(a, call, fail);
}
#define CPU_CHECK(expr)               \
  do {                                \
    polychip_status s_ = (expr);      \
    if (s_ != POLYCHIP_OK) return s_; \
  } while (0)

const char* last_error_message() { return g_last_error.c_str(); }

polychip_status device_count(polychip_device_count_args* a) {
  CPU_CHECK(check_args(a, "device_count"));
  a->count = 1;
  a->unavailable_reason = nullptr;
  return POLYCHIP_OK;
}

polychip_status device_properties(polychip_device_properties_args* a) {
  CPU_CHECK(check_args(a, "device_properties"));
  CPU_CHECK(check_device(a->device));
  if (!a->properties)
    return fail(POLYCHIP_INVALID_ARGUMENT, "device_properties: properties is NULL");
  polychip_device_properties p{};
  p.struct_size = sizeof p;
  std::snprintf(p.device_type, sizeof p.device_type, "cpu.host");
  std::snprintf(p.name, sizeof p.name, "host CPU (reference device)");
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  p.memory_bytes = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * page : 0;
  for (int d = POLYCHIP_DTYPE_F64; d < POLYCHIP_DTYPE_COUNT_; ++d) p.supported_dtypes |= 1ull << d;
  p.capabilities =
      POLYCHIP_CAP_HOST_VISIBLE_MEMORY | POLYCHIP_CAP_TIMING_EVENTS | POLYCHIP_CAP_NETWORK_EXPORT;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  p.compute_units = cores > 0 ? static_cast<int32_t>(cores) : 1;
  return write_within_struct_size(p, a->properties, "device_properties", fail);
}

polychip_status memory_allocate(polychip_memory_allocate_args* a) {
  CPU_CHECK(check_args(a, "memory_allocate"));
  CPU_CHECK(check_device(a->device));
  if (a->kind != POLYCHIP_MEMORY_DEVICE && a->kind != POLYCHIP_MEMORY_PINNED_HOST)
    return fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("unknown memory kind {}", a->kind));
  // 64-byte alignment suits every dtype and vector unit.
  size_t bytes = (a->size_bytes + 63) / 64 * 64;
  void* data = bytes ? std::aligned_alloc(64, bytes) : nullptr;
  if (bytes && !data)
    return fail(POLYCHIP_OUT_OF_MEMORY, fmt::format("cannot allocate {} bytes", a->size_bytes));
  auto* m = new (std::nothrow) Memory{data, a->size_bytes, a->kind};
  if (!m) {
    std::free(data);
    return fail(POLYCHIP_OUT_OF_MEMORY, "cannot allocate a memory handle");
  }
  a->memory = reinterpret_cast<polychip_memory*>(m);
  return POLYCHIP_OK;
}

polychip_status memory_free(polychip_memory_free_args* a) {
  CPU_CHECK(check_args(a, "memory_free"));
  if (Memory* m = as_memory(a->memory)) {
    std::free(m->data);
    delete m;
  }
  return POLYCHIP_OK;
}

polychip_status memory_host_pointer(polychip_memory_host_pointer_args* a) {
  CPU_CHECK(check_args(a, "memory_host_pointer"));
  if (!a->memory) return fail(POLYCHIP_INVALID_ARGUMENT, "memory_host_pointer: memory is NULL");
  a->host_pointer = as_memory(a->memory)->data;
  return POLYCHIP_OK;
}

// Host memory: any NIC registers it as it is.
polychip_status memory_export(polychip_memory_export_args* a) {
  CPU_CHECK(check_args(a, "memory_export"));
  if (!a->memory) return fail(POLYCHIP_INVALID_ARGUMENT, "memory_export: memory is NULL");
  const Memory* m = as_memory(a->memory);
  a->interface = POLYCHIP_MEMORY_INTERFACE_SYSTEM;
  a->device_ordinal = 0;
  a->address = m->data;
  a->size_bytes = m->size;
  a->dmabuf_fd = -1;
  a->dmabuf_offset = 0;
  return POLYCHIP_OK;
}

polychip_status check_range(polychip_memory* mem, uint64_t offset, uint64_t size,
                            const char* side) {
  if (!mem) return fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("copy: {} memory is NULL", side));
  uint64_t cap = as_memory(mem)->size;
  if (offset > cap || size > cap - offset)
    return fail(POLYCHIP_INVALID_ARGUMENT,
                fmt::format("copy: {} bytes [{}, {}) exceed the allocation of {} bytes", side,
                            offset, offset + size, cap));
  return POLYCHIP_OK;
}

polychip_status copy(polychip_copy_args* a) {
  CPU_CHECK(check_args(a, "copy"));
  const void* src = nullptr;
  void* dst = nullptr;
  switch (a->kind) {
    case POLYCHIP_COPY_HOST_TO_DEVICE:
      CPU_CHECK(check_range(a->dst_memory, a->dst_offset, a->size_bytes, "destination"));
      src = a->src_host;
      dst = static_cast<char*>(as_memory(a->dst_memory)->data) + a->dst_offset;
      break;
    case POLYCHIP_COPY_DEVICE_TO_HOST:
      CPU_CHECK(check_range(a->src_memory, a->src_offset, a->size_bytes, "source"));
      src = static_cast<char*>(as_memory(a->src_memory)->data) + a->src_offset;
      dst = a->dst_host;
      break;
    case POLYCHIP_COPY_DEVICE_TO_DEVICE:
      CPU_CHECK(check_range(a->src_memory, a->src_offset, a->size_bytes, "source"));
      CPU_CHECK(check_range(a->dst_memory, a->dst_offset, a->size_bytes, "destination"));
      src = static_cast<char*>(as_memory(a->src_memory)->data) + a->src_offset;
      dst = static_cast<char*>(as_memory(a->dst_memory)->data) + a->dst_offset;
      break;
    default:
      return fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("copy: unknown copy kind {}", a->kind));
  }
  if (a->size_bytes == 0) return POLYCHIP_OK;
  if (!src || !dst) return fail(POLYCHIP_INVALID_ARGUMENT, "copy: host pointer is NULL");
  std::memmove(dst, src, a->size_bytes);
  return POLYCHIP_OK;
}

polychip_status stream_create(polychip_stream_create_args* a) {
  CPU_CHECK(check_args(a, "stream_create"));
  CPU_CHECK(check_device(a->device));
  a->stream = reinterpret_cast<polychip_stream*>(new StreamImpl{a->device});
  return POLYCHIP_OK;
}

polychip_status stream_destroy(polychip_stream_args* a) {
  CPU_CHECK(check_args(a, "stream_destroy"));
  delete as_stream(a->stream);
  return POLYCHIP_OK;
}

polychip_status stream_synchronize(polychip_stream_args* a) {
  CPU_CHECK(check_args(a, "stream_synchronize"));
  if (!a->stream) return fail(POLYCHIP_INVALID_ARGUMENT, "stream_synchronize: stream is NULL");
  return POLYCHIP_OK;  // work completes when it is enqueued
}

polychip_status event_create(polychip_event_create_args* a) {
  CPU_CHECK(check_args(a, "event_create"));
  CPU_CHECK(check_device(a->device));
  a->event = reinterpret_cast<polychip_event*>(new EventImpl{a->device, false, {}});
  return POLYCHIP_OK;
}

polychip_status event_destroy(polychip_event_args* a) {
  CPU_CHECK(check_args(a, "event_destroy"));
  delete as_event(a->event);
  return POLYCHIP_OK;
}

polychip_status event_record(polychip_event_args* a) {
  CPU_CHECK(check_args(a, "event_record"));
  if (!a->event || !a->stream)
    return fail(POLYCHIP_INVALID_ARGUMENT, "event_record: NULL event or stream");
  EventImpl* e = as_event(a->event);
  e->recorded = true;
  e->when = std::chrono::steady_clock::now();
  return POLYCHIP_OK;
}

polychip_status stream_wait_event(polychip_event_args* a) {
  CPU_CHECK(check_args(a, "stream_wait_event"));
  if (!a->event || !a->stream)
    return fail(POLYCHIP_INVALID_ARGUMENT, "stream_wait_event: NULL event or stream");
  return POLYCHIP_OK;  // recorded work is already complete
}

polychip_status event_query(polychip_event_args* a) {
  CPU_CHECK(check_args(a, "event_query"));
  if (!a->event) return fail(POLYCHIP_INVALID_ARGUMENT, "event_query: event is NULL");
  a->complete = 1;
  return POLYCHIP_OK;
}

polychip_status event_synchronize(polychip_event_args* a) {
  CPU_CHECK(check_args(a, "event_synchronize"));
  if (!a->event) return fail(POLYCHIP_INVALID_ARGUMENT, "event_synchronize: event is NULL");
  return POLYCHIP_OK;
}

polychip_status event_elapsed(polychip_event_elapsed_args* a) {
  CPU_CHECK(check_args(a, "event_elapsed"));
  EventImpl *s = as_event(a->start), *e = as_event(a->end);
  if (!s || !e) return fail(POLYCHIP_INVALID_ARGUMENT, "event_elapsed: NULL event");
  if (!s->recorded || !e->recorded)
    return fail(POLYCHIP_FAILED_PRECONDITION, "event_elapsed: an event was never recorded");
  a->milliseconds = std::chrono::duration<double, std::milli>(e->when - s->when).count();
  return POLYCHIP_OK;
}

polychip_status kernel_table(polychip_kernel_table_args* a) {
  CPU_CHECK(check_args(a, "kernel_table"));
  CPU_CHECK(check_device(a->device));
  auto entries = kernel_entries();
  a->entries = entries.data();
  a->num_entries = static_cast<int32_t>(entries.size());
  return POLYCHIP_OK;
}

const polychip_adapter_api kApi = POLYCHIP_ADAPTER_API_V1_1_INIT("cpu", "polychip", "0.1.0");

}  // namespace

polychip_status fail(polychip_status code, std::string message) {
  g_last_error = std::move(message);
  return code;
}

}  // namespace polychip::cpu

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void) {
  return &polychip::cpu::kApi;
}
