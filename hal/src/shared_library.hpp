// A dlopen'ed library that stays loaded for the life of the process once
// something from it is in use (adapter tables and kernels are static data
// inside it), but is closed when it was refused.
#pragma once

#include <string>

namespace polychip {

class SharedLibrary {
 public:
  // Throws Error(NOT_FOUND) with dlerror()'s text when the file cannot load.
  explicit SharedLibrary(const std::string& path);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // nullptr when the symbol is missing.
  void* symbol(const char* name) const;
  // Keeps the library loaded after this object is gone.
  void keep_loaded() { handle_ = nullptr; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* handle_;
};

}  // namespace polychip
