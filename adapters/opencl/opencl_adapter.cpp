// The C ABI of the opencl adapter: memory as cl_mem, pinned host memory as
// CL_MEM_ALLOC_HOST_PTR buffers mapped once, streams as in-order queues with
// profiling, events as markers.
#include "opencl_adapter.hpp"

#include <cstring>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "host/abi_checks.hpp"
#include "host/copy_checks.hpp"
#include "host/device_queries.hpp"
#include "host/event_checks.hpp"
#include "host/kernel_table.hpp"
#include "host/memory_checks.hpp"

namespace polychip::opencl {
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

const char* last_error_message() { return errors().last_message(); }

polychip_status device_count(polychip_device_count_args* args) {
  return errors().guarded("device_count", [&] {
    require_args(args);
    opencl_family::answer_device_count(platforms().devices.size(), platforms().unavailable_reason,
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
    opencl_family::check_allocation(args->kind, args->size_bytes, dev.max_alloc_bytes);
    auto m = std::make_unique<Memory>(
        Memory{args->device, args->kind, args->size_bytes, nullptr, nullptr});
    if (args->size_bytes > 0) {
      cl_int err = CL_SUCCESS;
      cl_mem_flags flags = CL_MEM_READ_WRITE;
      if (args->kind == POLYCHIP_MEMORY_PINNED_HOST) flags |= CL_MEM_ALLOC_HOST_PTR;
      m->mem = cl().clCreateBuffer(dev.context, flags, args->size_bytes, nullptr, &err);
      check_cl(err, "clCreateBuffer");
      if (args->kind == POLYCHIP_MEMORY_PINNED_HOST) {
        m->mapped =
            cl().clEnqueueMapBuffer(dev.sync_queue, m->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                    args->size_bytes, 0, nullptr, nullptr, &err);
        if (err != CL_SUCCESS) cl().clReleaseMemObject(m->mem);
        check_cl(err, "clEnqueueMapBuffer");
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
    if (m->mem) {
      if (m->mapped) {
        Device& dev = device_at(m->device);
        cl().clEnqueueUnmapMemObject(dev.sync_queue, m->mem, m->mapped, 0, nullptr, nullptr);
        cl().clFinish(dev.sync_queue);
      }
      cl().clReleaseMemObject(m->mem);
    }
    delete m;
  });
}

polychip_status memory_host_pointer(polychip_memory_host_pointer_args* args) {
  return errors().guarded("memory_host_pointer", [&] {
    require_args(args);
    Memory* m = require_memory(args->memory, "memory");
    opencl_family::require_host_visible(m->kind, "opencl");
    args->host_pointer = m->mapped;
  });
}

// Copies wait for the stream (or run on the device's synchronous queue),
// treating pinned host memory as the host pointer it is mapped at.
polychip_status copy(polychip_copy_args* args) {
  return errors().guarded("copy", [&] {
    require_args(args);
    const uint64_t size = args->size_bytes;
    auto ends = opencl_family::copy_ends<Memory>(*args, as_memory);
    Memory* src = ends.src_memory;
    Memory* dst = ends.dst_memory;
    const void* src_host = ends.src_host;
    void* dst_host = ends.dst_host;
    Stream* stream = args->stream ? as_stream(args->stream) : nullptr;
    int32_t device = opencl_family::copy_device(
        ends, stream ? std::optional<int32_t>(stream->device) : std::nullopt, "opencl");
    if (size == 0) return;
    Device& dev = device_at(device);
    cl_command_queue q = stream ? stream->queue : dev.sync_queue;
    cl_bool blocking = stream ? CL_FALSE : CL_TRUE;
    // Pinned memory is host memory: use its mapping as the host side.
    if (src && src->kind == POLYCHIP_MEMORY_PINNED_HOST) {
      src_host = static_cast<const char*>(src->mapped) + args->src_offset;
      src = nullptr;
    }
    if (dst && dst->kind == POLYCHIP_MEMORY_PINNED_HOST) {
      dst_host = static_cast<char*>(dst->mapped) + args->dst_offset;
      dst = nullptr;
    }
    if (src && dst) {
      check_cl(cl().clEnqueueCopyBuffer(q, src->mem, dst->mem, args->src_offset, args->dst_offset,
                                        size, 0, nullptr, nullptr),
               "clEnqueueCopyBuffer");
      if (!stream) check_cl(cl().clFinish(q), "clFinish");
    } else if (dst) {
      check_cl(cl().clEnqueueWriteBuffer(q, dst->mem, blocking, args->dst_offset, size, src_host, 0,
                                         nullptr, nullptr),
               "clEnqueueWriteBuffer");
    } else if (src) {
      check_cl(cl().clEnqueueReadBuffer(q, src->mem, blocking, args->src_offset, size, dst_host, 0,
                                        nullptr, nullptr),
               "clEnqueueReadBuffer");
    } else {
      // Host to host (pinned on either side): ordered after the stream's work.
      if (stream) check_cl(cl().clFinish(q), "clFinish");
      std::memmove(dst_host, src_host, size);
    }
    if (stream) check_cl(cl().clFlush(q), "clFlush");
  });
}

polychip_status stream_create(polychip_stream_create_args* args) {
  return errors().guarded("stream_create", [&] {
    require_args(args);
    Device& dev = device_at(args->device);
    cl_int err = CL_SUCCESS;
    cl_command_queue q =
        cl().clCreateCommandQueue(dev.context, dev.id, CL_QUEUE_PROFILING_ENABLE, &err);
    check_cl(err, "clCreateCommandQueue");
    args->stream = reinterpret_cast<polychip_stream*>(new Stream{args->device, q});
  });
}

polychip_status stream_destroy(polychip_stream_args* args) {
  return errors().guarded("stream_destroy", [&] {
    require_args(args);
    if (!args->stream) return;
    Stream* s = as_stream(args->stream);
    cl().clFinish(s->queue);
    cl().clReleaseCommandQueue(s->queue);
    delete s;
  });
}

polychip_status stream_synchronize(polychip_stream_args* args) {
  return errors().guarded("stream_synchronize", [&] {
    require_args(args);
    check_cl(cl().clFinish(require_stream(args->stream)->queue), "clFinish");
  });
}

polychip_status event_create(polychip_event_create_args* args) {
  return errors().guarded("event_create", [&] {
    require_args(args);
    device_at(args->device);
    args->event = reinterpret_cast<polychip_event*>(new Event{args->device, nullptr});
  });
}

polychip_status event_destroy(polychip_event_args* args) {
  return errors().guarded("event_destroy", [&] {
    require_args(args);
    if (!args->event) return;
    Event* e = as_event(args->event);
    if (e->event) cl().clReleaseEvent(e->event);
    delete e;
  });
}

polychip_status event_record(polychip_event_args* args) {
  return errors().guarded("event_record", [&] {
    require_args(args);
    Event* e = require_event(args->event, "event");
    Stream* s = require_stream(args->stream);
    opencl_family::check_record_devices(e->device, s->device);
    cl_event marker = nullptr;
    check_cl(cl().clEnqueueMarkerWithWaitList(s->queue, 0, nullptr, &marker),
             "clEnqueueMarkerWithWaitList");
    cl().clFlush(s->queue);
    if (e->event) cl().clReleaseEvent(e->event);
    e->event = marker;
  });
}

polychip_status stream_wait_event(polychip_event_args* args) {
  return errors().guarded("stream_wait_event", [&] {
    require_args(args);
    Event* e = require_event(args->event, "event");
    Stream* s = require_stream(args->stream);
    if (!e->event) return;  // never recorded: nothing to wait for
    if (e->device == s->device) {
      check_cl(cl().clEnqueueBarrierWithWaitList(s->queue, 1, &e->event, nullptr),
               "clEnqueueBarrierWithWaitList");
    } else {
      // Another device has another context: wait on the host instead.
      check_cl(cl().clWaitForEvents(1, &e->event), "clWaitForEvents");
    }
  });
}

polychip_status event_query(polychip_event_args* args) {
  return errors().guarded("event_query", [&] {
    require_args(args);
    Event* e = require_event(args->event, "event");
    if (!e->event) {
      args->complete = 1;
      return;
    }
    cl_int status = CL_QUEUED;
    check_cl(cl().clGetEventInfo(e->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                                 &status, nullptr),
             "clGetEventInfo");
    if (status < 0)
      fail(POLYCHIP_ABORTED, fmt::format("the recorded work failed: {}", cl_error_name(status)));
    args->complete = status == CL_COMPLETE ? 1 : 0;
  });
}

polychip_status event_synchronize(polychip_event_args* args) {
  return errors().guarded("event_synchronize", [&] {
    require_args(args);
    Event* e = require_event(args->event, "event");
    if (e->event) check_cl(cl().clWaitForEvents(1, &e->event), "clWaitForEvents");
  });
}

cl_ulong event_end_ns(Event* e, const char* name) {
  opencl_family::require_recorded(e->event != nullptr, name);
  check_cl(cl().clWaitForEvents(1, &e->event), "clWaitForEvents");
  cl_ulong t = 0;
  check_cl(cl().clGetEventProfilingInfo(e->event, CL_PROFILING_COMMAND_END, sizeof t, &t, nullptr),
           "clGetEventProfilingInfo");
  return t;
}

polychip_status event_elapsed(polychip_event_elapsed_args* args) {
  return errors().guarded("event_elapsed", [&] {
    require_args(args);
    Event* start = require_event(args->start, "start");
    Event* end = require_event(args->end, "end");
    opencl_family::check_elapsed_devices(start->device, end->device);
    cl_ulong t0 = event_end_ns(start, "start");
    cl_ulong t1 = event_end_ns(end, "end");
    args->milliseconds = (static_cast<double>(t1) - static_cast<double>(t0)) / 1e6;
  });
}

polychip_status kernel_table(polychip_kernel_table_args* args) {
  return errors().guarded("kernel_table", [&] {
    require_args(args);
    opencl_family::answer_kernel_table(kernel_entries(device_at(args->device)), args);
  });
}

const polychip_adapter_api kApi = POLYCHIP_ADAPTER_API_V1_INIT("opencl", "polychip", "0.1.0");

}  // namespace

opencl_family::ErrorChannel& errors() {
  thread_local opencl_family::ErrorChannel channel("opencl");
  return channel;
}

}  // namespace polychip::opencl

extern "C" const polychip_adapter_api* polychip_opencl_adapter_get_api(void) {
  return &polychip::opencl::kApi;
}
