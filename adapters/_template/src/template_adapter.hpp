// Internal declarations of the template adapter. Rename "template" to your
// chip (see docs/adapter-guide.md) and replace each part in turn: memory.cpp
// (device memory and copies), streams.cpp (streams and events), kernels.cpp
// (your kernels; unported ops forward to the cpu reference kernels),
// adapter.cpp (identity, devices and the exported table).
#pragma once

#include <chrono>
#include <string>

#include "polychip/adapter_abi.h"

namespace template_adapter {

// Rename here, once: the adapter's name (unique among adapters, lower case)
// and its device type ("<vendor>.<model>", lower case, globally unique: a
// copy that keeps "template.host" under another name claims the template's
// devices in patches, hooks and certification results).
inline constexpr const char* kAdapterName = "template";
inline constexpr const char* kDeviceType = "template.host";

// What this adapter's handles point to. Memory is host memory obtained from
// the polychip cpu adapter, so the cpu kernels can run on it unchanged; a
// real adapter keeps its device pointer here instead.
struct Memory {
  polychip_memory* cpu_memory;  // the cpu adapter's handle for the same bytes
  void* host;
  uint64_t size;
  polychip_memory_kind kind;
};
// Work runs synchronously in submission order, so a stream only needs the
// cpu stream the forwarded kernels run on. A real adapter keeps its queue.
struct Stream {
  int device;
  polychip_stream* cpu_stream;
};
struct Event {
  int device;
  bool recorded;
  std::chrono::steady_clock::time_point when;
};

inline Memory* as_memory(polychip_memory* m) { return reinterpret_cast<Memory*>(m); }
inline Stream* as_stream(polychip_stream* s) { return reinterpret_cast<Stream*>(s); }
inline Event* as_event(polychip_event* e) { return reinterpret_cast<Event*>(e); }

// Records the message last_error_message() returns and passes `status` on.
polychip_status fail(polychip_status status, std::string message);
// INVALID_ARGUMENT unless `device` is 0, the only device.
polychip_status check_device(int device, const char* call);
// The cpu adapter's table, found in the process that loaded this plugin
// (libpolychip exports polychip_cpu_adapter_get_api); nullptr if absent.
const polychip_adapter_api* cpu_adapter();
// Why cpu_adapter() is nullptr.
const char* cpu_adapter_missing_reason();

// memory.cpp
polychip_status memory_allocate(polychip_memory_allocate_args* args);
polychip_status memory_free(polychip_memory_free_args* args);
polychip_status memory_host_pointer(polychip_memory_host_pointer_args* args);
polychip_status copy(polychip_copy_args* args);

// streams.cpp
polychip_status stream_create(polychip_stream_create_args* args);
polychip_status stream_destroy(polychip_stream_args* args);
polychip_status stream_synchronize(polychip_stream_args* args);
polychip_status event_create(polychip_event_create_args* args);
polychip_status event_destroy(polychip_event_args* args);
polychip_status event_record(polychip_event_args* args);
polychip_status stream_wait_event(polychip_event_args* args);
polychip_status event_query(polychip_event_args* args);
polychip_status event_synchronize(polychip_event_args* args);
polychip_status event_elapsed(polychip_event_elapsed_args* args);

// kernels.cpp
polychip_status kernel_table(polychip_kernel_table_args* args);

}  // namespace template_adapter
