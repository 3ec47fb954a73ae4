#include "host/runtime_library.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

namespace polychip::opencl_family {

void* open_runtime_library(const char* library, std::string_view missing, std::string* reason) {
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    *reason = fmt::format("{} ({})", missing, err ? err : library);
  }
  return handle;
}

}  // namespace polychip::opencl_family
