#include "adapter_table_check.hpp"

#include <fmt/format.h>

namespace polychip {
namespace {

std::string check_version(const polychip_abi_version& v, int hal_major, int hal_minor) {
  if (v.major != hal_major)
    return fmt::format(
        "ABI version {}.{} is incompatible with this HAL's ABI {}.{}: major versions differ "
        "(rebuild it against polychip ABI {}.x headers)",
        v.major, v.minor, hal_major, hal_minor, hal_major);
  if (v.minor < 0) return fmt::format("malformed table: negative minor version {}", v.minor);
  // Any minor version is accepted: older ones lack appended fields that the
  // HAL then does not read; newer ones carry fields the HAL ignores.
  return "";
}

}  // namespace

std::string check_adapter_table(const polychip_adapter_api* api, int hal_major, int hal_minor) {
  if (!api) return "the entry function returned NULL";
  if (api->struct_size < POLYCHIP_ADAPTER_API_STRUCT_SIZE_V1_0)
    return fmt::format(
        "table struct_size {} is smaller than the ABI {}.0 table ({} bytes): built against "
        "an incompatible header, or the table is corrupt",
        api->struct_size, hal_major, POLYCHIP_ADAPTER_API_STRUCT_SIZE_V1_0);
  if (auto e = check_version(api->abi_version, hal_major, hal_minor); !e.empty()) return e;
  if (!api->name || !*api->name) return "malformed table: the adapter has no name";
  if (!api->vendor || !api->adapter_version) return "malformed table: vendor or version is NULL";
  struct Slot {
    const char* name;
    const void* fn;
  };
  const Slot slots[] = {
      {"last_error_message", reinterpret_cast<const void*>(api->last_error_message)},
      {"device_count", reinterpret_cast<const void*>(api->device_count)},
      {"device_properties", reinterpret_cast<const void*>(api->device_properties)},
      {"memory_allocate", reinterpret_cast<const void*>(api->memory_allocate)},
      {"memory_free", reinterpret_cast<const void*>(api->memory_free)},
      {"memory_host_pointer", reinterpret_cast<const void*>(api->memory_host_pointer)},
      {"copy", reinterpret_cast<const void*>(api->copy)},
      {"stream_create", reinterpret_cast<const void*>(api->stream_create)},
      {"stream_destroy", reinterpret_cast<const void*>(api->stream_destroy)},
      {"stream_synchronize", reinterpret_cast<const void*>(api->stream_synchronize)},
      {"event_create", reinterpret_cast<const void*>(api->event_create)},
      {"event_destroy", reinterpret_cast<const void*>(api->event_destroy)},
      {"event_record", reinterpret_cast<const void*>(api->event_record)},
      {"stream_wait_event", reinterpret_cast<const void*>(api->stream_wait_event)},
      {"event_query", reinterpret_cast<const void*>(api->event_query)},
      {"event_synchronize", reinterpret_cast<const void*>(api->event_synchronize)},
      {"event_elapsed", reinterpret_cast<const void*>(api->event_elapsed)},
      {"kernel_table", reinterpret_cast<const void*>(api->kernel_table)},
  };
  for (const auto& s : slots)
    if (!s.fn) return fmt::format("malformed table: function '{}' is NULL", s.name);
  return "";
}

std::string check_patch_table(const polychip_patch_api* api, int hal_major, int hal_minor) {
  if (!api) return "the entry function returned NULL";
  if (api->struct_size < POLYCHIP_PATCH_API_STRUCT_SIZE_V1_0)
    return fmt::format("patch table struct_size {} is smaller than the ABI {}.0 table ({} bytes)",
                       api->struct_size, hal_major, POLYCHIP_PATCH_API_STRUCT_SIZE_V1_0);
  if (auto e = check_version(api->abi_version, hal_major, hal_minor); !e.empty()) return e;
  if (!api->patch_name || !*api->patch_name) return "malformed patch table: no patch_name";
  if ((api->num_patches > 0 && !api->patches) || (api->num_hooks > 0 && !api->hooks) ||
      api->num_patches < 0 || api->num_hooks < 0)
    return "malformed patch table: entry arrays do not match their counts";
  return "";
}

}  // namespace polychip
