// The C ABI of the level_zero adapter.
#include "level_zero_adapter.hpp"

#include <limits>
#include <optional>
#include <string>

#include "host/abi_checks.hpp"
#include "host/copy_checks.hpp"
#include "host/device_queries.hpp"
#include "host/event_checks.hpp"
#include "host/kernel_table.hpp"
#include "host/memory_checks.hpp"

namespace polychip::level_zero {
namespace {

using opencl_family::require_args;
using opencl_family::require_handle;

Memory* require_memory(polychip_memory* m, const char* name) {
  return as_memory(require_handle(m, name));
}
Stream* require_stream(polychip_stream* s) { return as_stream(require_handle(s, "stream")); }
Event* require_event(polychip_event* e, const char* name) {
  return as_event(require_handle(e, name));
}

ze_command_queue_handle_t create_queue(Device& dev) {
  ze_command_queue_desc_t desc{};
  desc.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
  desc.ordinal = dev.compute_queue_ordinal;
  desc.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
  desc.priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
  ze_command_queue_handle_t q = nullptr;
  check_ze(ze().zeCommandQueueCreate(dev.context, dev.handle, &desc, &q), "zeCommandQueueCreate");
  return q;
}

// One queue per device for synchronous copies, created on first use.
Stream& sync_stream(int32_t index) {
  static std::mutex mutex;
  static std::map<int32_t, std::unique_ptr<Stream>> streams;
  std::lock_guard lock(mutex);
  auto& s = streams[index];
  if (!s) s = std::make_unique<Stream>(index, create_queue(device_at(index)));
  return *s;
}

const char* last_error_message() { return errors().last_message(); }

polychip_status device_count(polychip_device_count_args* args) {
  return errors().guarded("device_count", [&] {
    require_args(args);
    opencl_family::answer_device_count(platform().devices.size(), platform().unavailable_reason,
                                       args);
  });
}

polychip_status device_properties(polychip_device_properties_args* args) {
  return errors().guarded("device_properties", [&] {
    require_args(args);
    opencl_family::copy_device_properties(device_at(args->device).properties, args->properties);
  });
}

polychip_status memory_allocate(polychip_memory_allocate_args* args) {
  return errors().guarded("memory_allocate", [&] {
    require_args(args);
    Device& dev = device_at(args->device);
    // A driver that gives no largest allocation (0) sets no limit.
    opencl_family::check_allocation(
        args->kind, args->size_bytes,
        dev.max_alloc_bytes ? dev.max_alloc_bytes : std::numeric_limits<uint64_t>::max());
    auto m = std::make_unique<Memory>(Memory{args->device, args->kind, args->size_bytes, nullptr});
    if (args->size_bytes > 0) {
      constexpr size_t kAlignment = 64;
      if (args->kind == POLYCHIP_MEMORY_DEVICE) {
        ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
        check_ze(ze().zeMemAllocDevice(dev.context, &desc, args->size_bytes, kAlignment, dev.handle,
                                       &m->ptr),
                 "zeMemAllocDevice");
      } else {
        ze_host_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
        check_ze(ze().zeMemAllocHost(dev.context, &desc, args->size_bytes, kAlignment, &m->ptr),
                 "zeMemAllocHost");
      }
    }
    args->memory = reinterpret_cast<polychip_memory*>(m.release());
  });
}

polychip_status memory_free(polychip_memory_free_args* args) {
  return errors().guarded("memory_free", [&] {
    require_args(args);
    if (!args->memory) return;
    Memory* m = as_memory(args->memory);
    if (m->ptr) check_ze(ze().zeMemFree(device_at(m->device).context, m->ptr), "zeMemFree");
    delete m;
  });
}

polychip_status memory_host_pointer(polychip_memory_host_pointer_args* args) {
  return errors().guarded("memory_host_pointer", [&] {
    require_args(args);
    Memory* m = require_memory(args->memory, "memory");
    opencl_family::require_host_visible(m->kind, "level_zero");
    args->host_pointer = m->ptr;
  });
}

// Device memory as its Level Zero pointer (FI_HMEM_ZE, device = the
// adapter's device index); host allocations as system memory.
polychip_status memory_export(polychip_memory_export_args* args) {
  return errors().guarded("memory_export", [&] {
    require_args(args);
    const Memory* m = require_memory(args->memory, "memory");
    const bool device = m->kind == POLYCHIP_MEMORY_DEVICE;
    args->interface = device ? POLYCHIP_MEMORY_INTERFACE_ZE : POLYCHIP_MEMORY_INTERFACE_SYSTEM;
    args->device_ordinal = device ? m->device : 0;
    args->address = m->ptr;
    args->size_bytes = m->size;
    args->dmabuf_fd = -1;
    args->dmabuf_offset = 0;
  });
}

polychip_status copy(polychip_copy_args* args) {
  return errors().guarded("copy", [&] {
    require_args(args);
    const uint64_t size = args->size_bytes;
    auto ends = opencl_family::copy_ends<Memory>(*args, as_memory);
    // Every end as a pointer: memory is addressed like host memory.
    const void* src = ends.src_memory
                          ? static_cast<const char*>(ends.src_memory->ptr) + args->src_offset
                          : ends.src_host;
    void* dst = ends.dst_memory ? static_cast<char*>(ends.dst_memory->ptr) + args->dst_offset
                                : ends.dst_host;
    Stream* stream = args->stream ? as_stream(args->stream) : nullptr;
    int32_t device = opencl_family::copy_device(
        ends, stream ? std::optional<int32_t>(stream->device()) : std::nullopt, "level_zero");
    if (size == 0) return;
    Device& dev = device_at(device);
    Stream& s = stream ? *stream : sync_stream(device);
    s.submit(dev, [&](ze_command_list_handle_t list) {
      check_ze(ze().zeCommandListAppendMemoryCopy(list, dst, src, size, nullptr, 0, nullptr),
               "zeCommandListAppendMemoryCopy");
    });
    if (!stream) s.synchronize();
  });
}

polychip_status stream_create(polychip_stream_create_args* args) {
  return errors().guarded("stream_create", [&] {
    require_args(args);
    Device& dev = device_at(args->device);
    args->stream = reinterpret_cast<polychip_stream*>(new Stream(args->device, create_queue(dev)));
  });
}

polychip_status stream_destroy(polychip_stream_args* args) {
  return errors().guarded("stream_destroy", [&] {
    require_args(args);
    delete as_stream(args->stream);
  });
}

polychip_status stream_synchronize(polychip_stream_args* args) {
  return errors().guarded("stream_synchronize", [&] {
    require_args(args);
    require_stream(args->stream)->synchronize();
  });
}

polychip_status event_create(polychip_event_create_args* args) {
  return errors().guarded("event_create", [&] {
    require_args(args);
    Device& dev = device_at(args->device);
    ze_event_pool_desc_t pool_desc{
        ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr,
        ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 1};
    ze_event_pool_handle_t pool = nullptr;
    check_ze(ze().zeEventPoolCreate(dev.context, &pool_desc, 1, &dev.handle, &pool),
             "zeEventPoolCreate");
    ze_event_desc_t desc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST,
                         ZE_EVENT_SCOPE_FLAG_HOST};
    ze_event_handle_t event = nullptr;
    ze_result_t r = ze().zeEventCreate(pool, &desc, &event);
    if (r != ZE_RESULT_SUCCESS) ze().zeEventPoolDestroy(pool);
    check_ze(r, "zeEventCreate");
    args->event = reinterpret_cast<polychip_event*>(new Event{args->device, pool, event, false});
  });
}

polychip_status event_destroy(polychip_event_args* args) {
  return errors().guarded("event_destroy", [&] {
    require_args(args);
    if (!args->event) return;
    Event* e = as_event(args->event);
    if (e->recorded) ze().zeEventHostSynchronize(e->event, UINT64_MAX);
    ze().zeEventDestroy(e->event);
    ze().zeEventPoolDestroy(e->pool);
    delete e;
  });
}

polychip_status event_record(polychip_event_args* args) {
  return errors().guarded("event_record", [&] {
    require_args(args);
    Event* e = require_event(args->event, "event");
    Stream* s = require_stream(args->stream);
    opencl_family::check_record_devices(e->device, s->device());
    // Re-recording: wait for the previous signal, then reset (Level Zero
    // events are not re-armed by signalling).
    if (e->recorded) {
      check_ze(ze().zeEventHostSynchronize(e->event, UINT64_MAX), "zeEventHostSynchronize");
      check_ze(ze().zeEventHostReset(e->event), "zeEventHostReset");
    }
    s->submit(device_at(s->device()), [&](ze_command_list_handle_t list) {
      check_ze(ze().zeCommandListAppendBarrier(list, e->event, 0, nullptr),
               "zeCommandListAppendBarrier");
    });
    e->recorded = true;
  });
}

polychip_status stream_wait_event(polychip_event_args* args) {
  return errors().guarded("stream_wait_event", [&] {
    require_args(args);
    Event* e = require_event(args->event, "event");
    Stream* s = require_stream(args->stream);
    if (!e->recorded) return;
    if (e->device != s->device()) {
      check_ze(ze().zeEventHostSynchronize(e->event, UINT64_MAX), "zeEventHostSynchronize");
      return;
    }
    s->submit(device_at(s->device()), [&](ze_command_list_handle_t list) {
      check_ze(ze().zeCommandListAppendWaitOnEvents(list, 1, &e->event),
               "zeCommandListAppendWaitOnEvents");
    });
  });
}

polychip_status event_query(polychip_event_args* args) {
  return errors().guarded("event_query", [&] {
    require_args(args);
    Event* e = require_event(args->event, "event");
    if (!e->recorded) {
      args->complete = 1;
      return;
    }
    ze_result_t r = ze().zeEventQueryStatus(e->event);
    if (r != ZE_RESULT_SUCCESS && r != ZE_RESULT_NOT_READY) check_ze(r, "zeEventQueryStatus");
    args->complete = r == ZE_RESULT_SUCCESS ? 1 : 0;
  });
}

polychip_status event_synchronize(polychip_event_args* args) {
  return errors().guarded("event_synchronize", [&] {
    require_args(args);
    Event* e = require_event(args->event, "event");
    if (e->recorded)
      check_ze(ze().zeEventHostSynchronize(e->event, UINT64_MAX), "zeEventHostSynchronize");
  });
}

uint64_t event_end_ticks(Event* e, const char* name) {
  opencl_family::require_recorded(e->recorded, name);
  check_ze(ze().zeEventHostSynchronize(e->event, UINT64_MAX), "zeEventHostSynchronize");
  ze_kernel_timestamp_result_t ts{};
  check_ze(ze().zeEventQueryKernelTimestamp(e->event, &ts), "zeEventQueryKernelTimestamp");
  return ts.global.kernelEnd;
}

polychip_status event_elapsed(polychip_event_elapsed_args* args) {
  return errors().guarded("event_elapsed", [&] {
    require_args(args);
    Event* start = require_event(args->start, "start");
    Event* end = require_event(args->end, "end");
    opencl_family::check_elapsed_devices(start->device, end->device);
    Device& dev = device_at(start->device);
    uint64_t t0 = event_end_ticks(start, "start"), t1 = event_end_ticks(end, "end");
    uint64_t ticks = (t1 - t0) & dev.timestamp_mask;  // the counter may wrap
    args->milliseconds = static_cast<double>(ticks) * dev.timer_ns_per_tick / 1e6;
  });
}

polychip_status kernel_table(polychip_kernel_table_args* args) {
  return errors().guarded("kernel_table", [&] {
    require_args(args);
    opencl_family::answer_kernel_table(kernel_entries(device_at(args->device)), args);
  });
}

const polychip_adapter_api kApi = POLYCHIP_ADAPTER_API_V1_1_INIT("level_zero", "polychip", "0.1.0");

}  // namespace

opencl_family::ErrorChannel& errors() {
  thread_local opencl_family::ErrorChannel channel("level_zero");
  return channel;
}

}  // namespace polychip::level_zero

extern "C" const polychip_adapter_api* polychip_level_zero_adapter_get_api(void) {
  return &polychip::level_zero::kApi;
}
