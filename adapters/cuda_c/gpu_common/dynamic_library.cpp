#include "dynamic_library.hpp"

#include <dlfcn.h>

namespace polychip::gpu {

DynamicLibrary::~DynamicLibrary() = default;

std::string DynamicLibrary::open(const std::vector<const char*>& names) {
  std::string tried, last_error;
  for (const char* name : names) {
    handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle_) {
      name_ = name;
      return "";
    }
    const char* e = dlerror();
    last_error = e ? e : "unknown dlopen error";
    tried += tried.empty() ? name : std::string(" / ") + name;
  }
  return tried + " not found (" + last_error + ")";
}

void* DynamicLibrary::lookup(const char* symbol) const {
  return handle_ ? dlsym(handle_, symbol) : nullptr;
}

}  // namespace polychip::gpu
