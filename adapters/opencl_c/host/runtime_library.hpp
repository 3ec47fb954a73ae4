// How an OpenCL-family adapter reaches its backend's runtime (the OpenCL
// ICD loader, the Level Zero loader): opened with dlopen at run time, never
// linked (decision 3), its entry points resolved once into a table, and why
// not kept for the adapter to report with zero devices.
#pragma once

#include <string>
#include <string_view>

namespace polychip::opencl_family {

// The table of entry points `Api`, or why it could not be loaded.
template <typename Api>
struct LoadedApi {
  Api api;
  bool ok = false;
  std::string reason;
};

// dlopen(library, RTLD_NOW | RTLD_LOCAL), never closed: kernels and
// contexts live until process exit. nullptr when it fails, with `*reason`
// "<missing> (<dlerror's text, or the library's name>)".
void* open_runtime_library(const char* library, std::string_view missing, std::string* reason);

// The table when it loaded; otherwise nullptr, and `*reason` (when
// `reason` is not null) says why.
template <typename Api>
const Api* loaded_api(const LoadedApi<Api>& loaded, std::string* reason) {
  if (!loaded.ok && reason) *reason = loaded.reason;
  return loaded.ok ? &loaded.api : nullptr;
}

}  // namespace polychip::opencl_family
