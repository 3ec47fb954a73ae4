// The runtime: adapters (built-in and plugins), their devices, and the
// dispatcher. Runtime::global() is what tools and frameworks use; tests
// build private runtimes with explicit options.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "polychip/adapter_abi.h"
#include "polychip/device.hpp"

namespace polychip {

class Dispatcher;

struct AdapterInfo {
  std::string name;
  std::string vendor;
  std::string version;
  int abi_major = 0;
  int abi_minor = 0;
  std::string origin;  // "built-in" or the plugin's file path
  int device_count = 0;
  std::string unavailable_reason;  // when device_count == 0
};

struct RefusedAdapter {
  std::string origin;  // file path
  std::string reason;  // names the file and both versions where relevant
};

struct RuntimeOptions {
  // Statically registered adapters (entry functions), tried in order.
  std::vector<polychip_adapter_get_api_fn> builtin_adapters;
  // Folders searched for plugin libraries (*.so, *.so.1...); POLYCHIP_ADAPTER_PATH.
  std::vector<std::string> adapter_path;
  // When set, only adapters with these names are kept; POLYCHIP_ADAPTERS.
  std::optional<std::vector<std::string>> selected_adapters;
  // Patch libraries to load; POLYCHIP_PATCHES.
  std::vector<std::string> patch_libraries;
  // A patch library that cannot be applied (missing file, unknown op, device
  // type or hook point) makes the Runtime constructor throw its reason. When
  // false it is listed in refused_adapters() instead (`polychip info`).
  bool refused_patch_library_throws = true;
  // Run ops an adapter lacks on the cpu adapter; POLYCHIP_HOST_FALLBACK (1/true/yes/on).
  bool host_fallback = false;

  // Built-ins plus whatever the POLYCHIP_* environment variables say. Throws
  // INVALID_ARGUMENT for a boolean variable that is not 1/0, true/false,
  // yes/no or on/off.
  static RuntimeOptions from_environment();
};

class Runtime {
 public:
  // Throws when a patch library is refused (see refused_patch_library_throws).
  explicit Runtime(RuntimeOptions options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Built once, from RuntimeOptions::from_environment().
  static Runtime& global();

  const std::vector<AdapterInfo>& adapters() const;
  const std::vector<RefusedAdapter>& refused_adapters() const;
  // nullptr when no adapter has that name.
  const polychip_adapter_api* adapter_api(std::string_view name) const;

  std::vector<Device> devices() const;
  // "cpu" / "cpu:0" (adapter[:index]) or a device type ("sim.faithful",
  // first device of that type). Throws NOT_FOUND listing what exists.
  Device device(std::string_view spec) const;
  // nullopt when no device has that type.
  std::optional<Device> find_device_type(std::string_view device_type) const;
  // Device types that more than one adapter reports, a line each ("device
  // type 'x.v1' is reported by adapters x, y"): device types are vendor.model
  // ids of one adapter's devices, by which patches, hooks, --adapters and
  // certification results name them, so two adapters sharing one (a renamed
  // copy of another) are ambiguous. Counts every adapter's devices, as a full
  // listing does.
  std::vector<std::string> device_type_conflicts() const;

  Dispatcher& dispatcher();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend class Device;
};

// The entry functions of the adapters built into libpolychip.
const std::vector<polychip_adapter_get_api_fn>& builtin_adapter_entries();

}  // namespace polychip
