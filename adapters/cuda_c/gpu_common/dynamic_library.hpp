// A vendor runtime opened with dlopen at run time (brief decision 3): the
// adapters never link against libcuda / libamdhip64 / libcublas, so one
// build loads everywhere.
#pragma once

#include <string>
#include <vector>

namespace polychip::gpu {

class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  ~DynamicLibrary();  // does not dlclose: drivers dislike being unloaded at exit
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  // Tries each name in order; returns "" or "<names> not found (<dlerror>)".
  std::string open(const std::vector<const char*>& names);
  bool is_open() const { return handle_ != nullptr; }
  const std::string& loaded_name() const { return name_; }

  // Resolves `symbol` into *fn; on failure records the missing name.
  template <typename Fn>
  void bind(Fn*& fn, const char* symbol) {
    fn = reinterpret_cast<Fn*>(lookup(symbol));
    if (!fn && missing_.empty()) missing_ = symbol;
  }
  // The first symbol bind() could not resolve, or "".
  const std::string& first_missing() const { return missing_; }

 private:
  void* lookup(const char* symbol) const;

  void* handle_ = nullptr;
  std::string name_;
  std::string missing_;
};

}  // namespace polychip::gpu
