#include "shared_library.hpp"

#include <dlfcn.h>

#include "polychip/error.hpp"

namespace polychip {

SharedLibrary::SharedLibrary(const std::string& path) : path_(path) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = dlerror();
    throw_error(StatusCode::kNotFound,
                std::string("cannot load: ") + (why ? why : "unknown error"));
  }
}

SharedLibrary::~SharedLibrary() {
  if (handle_) dlclose(handle_);
}

void* SharedLibrary::symbol(const char* name) const {
  dlerror();
  return dlsym(handle_, name);
}

}  // namespace polychip
