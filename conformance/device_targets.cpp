#include "device_targets.hpp"

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip::conformance {
namespace {

const AdapterInfo* find_adapter(const Runtime& runtime, const std::string& name) {
  for (const auto& a : runtime.adapters())
    if (a.name == name) return &a;
  return nullptr;
}

[[noreturn]] void throw_no_devices(const AdapterInfo& a, const std::string& requested) {
  throw_error(StatusCode::kNotFound,
              fmt::format("'{}': adapter '{}' has no devices: {}", requested, a.name,
                          a.unavailable_reason.empty() ? std::string("(it gave no reason)")
                                                       : a.unavailable_reason));
}

}  // namespace

std::vector<std::string> resolve_targets(const Runtime& runtime,
                                         const std::vector<std::string>& requested,
                                         bool expand_adapters) {
  std::vector<std::string> targets;
  for (const auto& entry : requested) {
    if (entry.empty()) throw_error(StatusCode::kInvalidArgument, "--adapters has an empty entry");
    const std::string adapter_name = entry.substr(0, entry.rfind(':'));
    if (const AdapterInfo* a = find_adapter(runtime, adapter_name)) {
      if (a->device_count == 0) throw_no_devices(*a, entry);
      if (expand_adapters && adapter_name == entry && a->device_count > 1) {
        for (int i = 0; i < a->device_count; ++i) targets.push_back(fmt::format("{}:{}", entry, i));
        continue;
      }
    }
    runtime.device(entry);  // throws "no device '...'" with the devices there are
    targets.push_back(entry);
  }
  return targets;
}

}  // namespace polychip::conformance
