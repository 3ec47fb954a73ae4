// `polychip info [--json]`: adapters (built-in and plugins, with ABI
// versions, and refused plugins with the reason), devices and their
// properties, active patches, hook points and hooks.
#include <algorithm>
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "polychip/hal.hpp"

namespace polychip::cli {
namespace {

std::vector<std::string> capability_names(uint64_t caps) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {POLYCHIP_CAP_HOST_VISIBLE_MEMORY, "host_visible_memory"},
      {POLYCHIP_CAP_PEER_ACCESS, "peer_access"},
      {POLYCHIP_CAP_DMABUF_EXPORT, "dmabuf_export"},
      {POLYCHIP_CAP_NETWORK_EXPORT, "network_export"},
      {POLYCHIP_CAP_ASYNC_COPY, "async_copy"},
      {POLYCHIP_CAP_TIMING_EVENTS, "timing_events"},
      {POLYCHIP_CAP_COPY_ENGINE, "copy_engine"}};
  std::vector<std::string> out;
  for (auto [bit, name] : kNames)
    if (caps & bit) out.push_back(name);
  return out;
}

// Ops of the contract the device has a kernel for, in any dtype.
int count_ops_with_kernels(Runtime& rt, const Device& d) {
  int n = 0;
  for (const auto& op : op_contract()) {
    for (DType t : op.dtypes) {
      DTypeSignature sig;
      for (const auto& ts : op.tensors)
        sig.push_back(ts.dtype_role == DTypeRole::kF32     ? DType::kF32
                      : ts.dtype_role == DTypeRole::kIndex ? DType::kI64
                                                           : t);
      bool found = false;
      try {
        found = rt.dispatcher().has_kernel(d, op.name, sig);
      } catch (const Error&) {
      }
      if (found) {
        ++n;
        break;
      }
    }
  }
  return n;
}

nlohmann::json info_json(Runtime& rt) {
  using nlohmann::json;
  json j;
  j["schema"] = "polychip.info/1";
  j["polychip_version"] = "0.1.0";
  j["abi_version"] = fmt::format("{}.{}", POLYCHIP_ABI_VERSION_MAJOR, POLYCHIP_ABI_VERSION_MINOR);
  j["adapters"] = json::array();
  for (const auto& a : rt.adapters())
    j["adapters"].push_back({{"name", a.name},
                             {"vendor", a.vendor},
                             {"version", a.version},
                             {"abi_version", fmt::format("{}.{}", a.abi_major, a.abi_minor)},
                             {"origin", a.origin},
                             {"device_count", a.device_count},
                             {"unavailable_reason", a.unavailable_reason}});
  j["refused"] = json::array();
  for (const auto& r : rt.refused_adapters())
    j["refused"].push_back({{"origin", r.origin}, {"reason", r.reason}});
  j["devices"] = json::array();
  for (const auto& d : rt.devices()) {
    const auto& p = d.properties();
    json dtypes = json::array();
    for (DType t : p.supported_dtypes) dtypes.push_back(std::string(dtype_name(t)));
    j["devices"].push_back({{"device", d.label()},
                            {"adapter", d.adapter_name()},
                            {"device_type", p.device_type},
                            {"name", p.name},
                            {"memory_bytes", p.memory_bytes},
                            {"compute_units", p.compute_units},
                            {"dtypes", dtypes},
                            {"capabilities", capability_names(p.capabilities)},
                            {"ops_with_kernels", count_ops_with_kernels(rt, d)},
                            {"ops_in_contract", op_contract().size()}});
  }
  j["device_type_conflicts"] = rt.device_type_conflicts();
  auto& disp = rt.dispatcher();
  j["patches"] = json::array();
  for (const auto& p : disp.active_patches())
    j["patches"].push_back({{"id", p.id},
                            {"device_type", p.device_type},
                            {"op", p.op},
                            {"signature", p.signature},
                            {"origin", p.origin}});
  j["hook_points"] = json::array();
  for (const auto& h : disp.hook_points())
    j["hook_points"].push_back({{"name", h.name}, {"description", h.description}});
  j["hooks"] = json::array();
  for (const auto& h : disp.hooks())
    j["hooks"].push_back({{"id", h.id},
                          {"device_type", h.device_type},
                          {"hook_point", h.hook_point},
                          {"origin", h.origin}});
  j["host_fallback"] = disp.host_fallback();
  return j;
}

void print_table(const nlohmann::json& j) {
  fmt::print("polychip {} (adapter ABI {})\n\n", j["polychip_version"].get<std::string>(),
             j["abi_version"].get<std::string>());
  size_t vendor_width = 6;
  for (const auto& a : j["adapters"])
    vendor_width = std::max(vendor_width, a["vendor"].get<std::string>().size());
  fmt::print("Adapters\n  {:<12} {:<{}} {:<8} {:<5} {:>7}  {}\n", "name", "vendor", vendor_width,
             "version", "abi", "devices", "origin / note");
  for (const auto& a : j["adapters"]) {
    std::string note = a["origin"].get<std::string>();
    if (a["device_count"] == 0) note += " — " + a["unavailable_reason"].get<std::string>();
    fmt::print("  {:<12} {:<{}} {:<8} {:<5} {:>7}  {}\n", a["name"].get<std::string>(),
               a["vendor"].get<std::string>(), vendor_width, a["version"].get<std::string>(),
               a["abi_version"].get<std::string>(), a["device_count"].get<int>(), note);
  }
  if (!j["refused"].empty()) {
    fmt::print("\nRefused\n");
    for (const auto& r : j["refused"])
      fmt::print("  {}: {}\n", r["origin"].get<std::string>(), r["reason"].get<std::string>());
  }
  fmt::print("\nDevices\n  {:<14} {:<24} {:>10} {:>5}  {}\n", "device", "device type", "memory MiB",
             "ops", "name");
  for (const auto& d : j["devices"])
    fmt::print("  {:<14} {:<24} {:>10} {:>2}/{:<2}  {}\n", d["device"].get<std::string>(),
               d["device_type"].get<std::string>(), d["memory_bytes"].get<uint64_t>() >> 20,
               d["ops_with_kernels"].get<int>(), d["ops_in_contract"].get<size_t>(),
               d["name"].get<std::string>());
  if (!j["device_type_conflicts"].empty()) {
    fmt::print("\nConflicts (a device type names one adapter's devices: rename one)\n");
    for (const auto& c : j["device_type_conflicts"]) fmt::print("  {}\n", c.get<std::string>());
  }
  fmt::print("\nActive patches: {}\n", j["patches"].empty() ? "none" : "");
  for (const auto& p : j["patches"])
    fmt::print("  #{} {} on {} [{}] by {}\n", p["id"].get<uint64_t>(), p["op"].get<std::string>(),
               p["device_type"].get<std::string>(), p["signature"].get<std::string>(),
               p["origin"].get<std::string>());
  fmt::print("Hook points: ");
  std::string sep;
  for (const auto& h : j["hook_points"]) {
    fmt::print("{}{}", sep, h["name"].get<std::string>());
    sep = ", ";
  }
  fmt::print("\nHooks: {}\n", j["hooks"].empty() ? "none" : "");
  for (const auto& h : j["hooks"])
    fmt::print("  #{} {} for {} by {}\n", h["id"].get<uint64_t>(),
               h["hook_point"].get<std::string>(), h["device_type"].get<std::string>(),
               h["origin"].get<std::string>());
  fmt::print("Host fallback: {}\n", j["host_fallback"].get<bool>() ? "on" : "off");
}

const bool registered = register_command(
    "info", "List adapters (and refused plugins), devices, patches and hooks", [](CLI::App& sub) {
      auto json = std::make_shared<bool>(false);
      sub.add_flag("--json", *json, "print machine-readable JSON");
      return [json] {
        // info lists a refused patch library with its reason instead of failing on it.
        auto options = RuntimeOptions::from_environment();
        options.refused_patch_library_throws = false;
        Runtime runtime(std::move(options));
        auto j = info_json(runtime);
        if (*json)
          std::puts(j.dump(2).c_str());
        else
          print_table(j);
        return 0;
      };
    });

}  // namespace
}  // namespace polychip::cli
