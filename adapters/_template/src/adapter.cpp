// Identity, devices, errors and the exported entry point of the template
// adapter: the one symbol a plugin must export is polychip_adapter_get_api.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "template_adapter.hpp"

namespace template_adapter {

namespace {

thread_local std::string g_last_error;

const char* last_error_message() { return g_last_error.c_str(); }

polychip_status device_count(polychip_device_count_args* args) {
  if (!args) return fail(POLYCHIP_INVALID_ARGUMENT, "device_count: args is NULL");
  // No runtime, no devices: report zero with the reason, never fail to load.
  args->count = cpu_adapter() ? 1 : 0;
  args->unavailable_reason = cpu_adapter() ? nullptr : cpu_adapter_missing_reason();
  return POLYCHIP_OK;
}

polychip_status device_properties(polychip_device_properties_args* args) {
  if (!args || !args->properties)
    return fail(POLYCHIP_INVALID_ARGUMENT, "device_properties: args or properties is NULL");
  if (polychip_status s = check_device(args->device, "device_properties")) return s;
  polychip_device_properties p{};
  // "vendor.model", lower case: globally unique, used by patches and hooks.
  std::snprintf(p.device_type, sizeof p.device_type, "%s", kDeviceType);
  std::snprintf(p.name, sizeof p.name, "%s adapter on host memory", kAdapterName);
  p.memory_bytes = uint64_t{1} << 30;
  for (int d = POLYCHIP_DTYPE_F64; d < POLYCHIP_DTYPE_COUNT_; ++d) p.supported_dtypes |= 1ull << d;
  p.capabilities = POLYCHIP_CAP_HOST_VISIBLE_MEMORY | POLYCHIP_CAP_TIMING_EVENTS;
  p.compute_units = 1;
  // ABI rule: write only what the caller's (possibly older) struct holds,
  // and keep its struct_size; one that does not cover itself was not set.
  if (args->properties->struct_size < sizeof(size_t))
    return fail(POLYCHIP_INVALID_ARGUMENT, "device_properties: properties->struct_size is not set");
  const size_t n =
      args->properties->struct_size < sizeof p ? args->properties->struct_size : sizeof p;
  std::memcpy(reinterpret_cast<char*>(args->properties) + sizeof(size_t),
              reinterpret_cast<const char*>(&p) + sizeof(size_t), n - sizeof(size_t));
  return POLYCHIP_OK;
}

}  // namespace

polychip_status fail(polychip_status status, std::string message) {
  g_last_error = std::string(kAdapterName) + ": " + message;
  return status;
}

polychip_status check_device(int device, const char* call) {
  if (!cpu_adapter())
    return fail(POLYCHIP_UNAVAILABLE, std::string(call) + ": " + cpu_adapter_missing_reason());
  if (device != 0)
    return fail(POLYCHIP_INVALID_ARGUMENT,
                std::string(call) + ": device " + std::to_string(device) + " does not exist");
  return POLYCHIP_OK;
}

const polychip_adapter_api* cpu_adapter() {
  // The process that loaded us (the polychip tool, a test, Python) has
  // libpolychip loaded; no link-time dependency on it is needed.
  static const polychip_adapter_api* api = [] {
    using GetApi = const polychip_adapter_api* (*)();
    auto get = reinterpret_cast<GetApi>(dlsym(RTLD_DEFAULT, "polychip_cpu_adapter_get_api"));
    return get ? get() : nullptr;
  }();
  return api;
}

const char* cpu_adapter_missing_reason() {
  return "the polychip cpu adapter (polychip_cpu_adapter_get_api) is not loaded in this "
         "process; load the plugin through libpolychip";
}

}  // namespace template_adapter

namespace {

using namespace template_adapter;

// name (kAdapterName); vendor; your own version, independent of the ABI
// version.
const polychip_adapter_api kApi =
    POLYCHIP_ADAPTER_API_V1_INIT(kAdapterName, "Example Vendor", "0.1.0");

}  // namespace

extern "C" POLYCHIP_EXPORT const polychip_adapter_api* polychip_adapter_get_api(void) {
  return &kApi;
}
