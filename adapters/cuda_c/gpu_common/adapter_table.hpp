// Builds the C ABI table (polychip_adapter_api) of a GpuAdapter singleton.
// The ABI's functions carry no context pointer, so each adapter gets its own
// set of static thunks by instantiating AdapterTable with its accessor.
// Thunks never let a C++ exception cross the C boundary.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "gpu_adapter.hpp"

namespace polychip::gpu {

template <GpuAdapter& (*Get)()>
class AdapterTable {
 public:
  static const polychip_adapter_api* table(const char* name, const char* vendor,
                                           const char* version) {
    static const polychip_adapter_api api = [&] {
      polychip_adapter_api a{};
      a.struct_size = sizeof a;
      a.abi_version = {sizeof(polychip_abi_version), POLYCHIP_ABI_VERSION_MAJOR,
                       POLYCHIP_ABI_VERSION_MINOR};
      a.name = name;
      a.vendor = vendor;
      a.adapter_version = version;
      a.last_error_message = &last_error_message;
      a.device_count = &call<polychip_device_count_args, &GpuAdapter::device_count>;
      a.device_properties = &call<polychip_device_properties_args, &GpuAdapter::device_properties>;
      a.memory_allocate = &call<polychip_memory_allocate_args, &GpuAdapter::memory_allocate>;
      a.memory_free = &call<polychip_memory_free_args, &GpuAdapter::memory_free>;
      a.memory_host_pointer =
          &call<polychip_memory_host_pointer_args, &GpuAdapter::memory_host_pointer>;
      a.copy = &call<polychip_copy_args, &GpuAdapter::copy>;
      a.stream_create = &call<polychip_stream_create_args, &GpuAdapter::stream_create>;
      a.stream_destroy = &call<polychip_stream_args, &GpuAdapter::stream_destroy>;
      a.stream_synchronize = &call<polychip_stream_args, &GpuAdapter::stream_synchronize>;
      a.event_create = &call<polychip_event_create_args, &GpuAdapter::event_create>;
      a.event_destroy = &call<polychip_event_args, &GpuAdapter::event_destroy>;
      a.event_record = &call<polychip_event_args, &GpuAdapter::event_record>;
      a.stream_wait_event = &call<polychip_event_args, &GpuAdapter::stream_wait_event>;
      a.event_query = &call<polychip_event_args, &GpuAdapter::event_query>;
      a.event_synchronize = &call<polychip_event_args, &GpuAdapter::event_synchronize>;
      a.event_elapsed = &call<polychip_event_elapsed_args, &GpuAdapter::event_elapsed>;
      a.kernel_table = &kernel_table;
      a.memory_export = &call<polychip_memory_export_args, &GpuAdapter::memory_export>;
      return a;
    }();
    return &api;
  }

 private:
  static std::string& error() {
    thread_local std::string message;
    return message;
  }
  static const char* last_error_message() { return error().c_str(); }

  static polychip_status finish(Status s) {
    if (!s.ok()) error() = std::move(s.message);
    return s.code;
  }

  template <typename F>
  static polychip_status guarded(F&& f) {
    try {
      return finish(f());
    } catch (const std::bad_alloc&) {
      return finish(make_status(POLYCHIP_OUT_OF_MEMORY, "host allocation failed"));
    } catch (const std::exception& e) {
      return finish(make_status(POLYCHIP_INTERNAL, e.what()));
    }
  }

  template <typename Args, Status (GpuAdapter::*Method)(Args*)>
  static polychip_status call(Args* args) {
    return guarded([&] { return (Get().*Method)(args); });
  }

  static polychip_status kernel(const polychip_kernel_args* args) {
    return guarded([&] { return Get().run_kernel(args); });
  }
  static polychip_status kernel_table(polychip_kernel_table_args* args) {
    return guarded([&] { return Get().kernel_table(args, &kernel); });
  }
};

}  // namespace polychip::gpu
