#include "shared_library.hpp"

#include <dlfcn.h>

#include "polychip/error.hpp"

namespace polychip {

SharedLibrary::SharedLibrary(const std::string& path) : path_(path) {
  // dlopen would take "" as the program itself and a path up to its NUL.
  if (path.empty() || path.find('\0') != std::string::npos)
    throw_error(StatusCode::kNotFound,
                "cannot load '" + path + "': not a file path (empty, or with a NUL byte)");
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
