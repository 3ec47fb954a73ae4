#include "transport/rdma/fabric_library.hpp"

#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "polychip/error.hpp"

namespace polychip::comm {
namespace {

constexpr const char* kLibraryName = "libfabric.so.1";

FabricLibrary load() {
  // Kept loaded for the life of the process: its providers keep threads and
  // registrations that must not outlive the code.
  void* handle = ::dlopen(kLibraryName, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    throw_error(StatusCode::kUnavailable,
                std::string("RDMA lanes need libfabric, and ") + kLibraryName + " did not load (" +
                    (why ? why : "unknown error") +
                    "): install libfabric1 (Debian) or set POLYCHIP_COMM_TRANSPORT=tcp");
  }
  FabricLibrary lib{};
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, name));
    if (!fn) {
      throw_error(StatusCode::kUnavailable, std::string(kLibraryName) + " has no " + name);
    }
  };
  bind(lib.getinfo, "fi_getinfo");
  bind(lib.freeinfo, "fi_freeinfo");
  bind(lib.dupinfo, "fi_dupinfo");
  bind(lib.fabric, "fi_fabric");
  bind(lib.strerror, "fi_strerror");
  return lib;
}

}  // namespace

const FabricLibrary& fabric_library() {
  // A load that throws is tried again by the next call.
  static const FabricLibrary library = load();
  return library;
}

}  // namespace polychip::comm
