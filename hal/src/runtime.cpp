#include "polychip/runtime.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "adapter_table_check.hpp"
#include "device_type_id.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "shared_library.hpp"

namespace polychip {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

// A plugin file: "name.so" or a versioned "name.so.1", "name.so.1.2"; not a
// README, nor a backup such as "name.so.bak" (dlopen would refuse it, noisily).
bool is_shared_library_name(std::string_view file_name) {
  for (;;) {  // drop ".<digits>" parts from the end until ".so" or something else
    const size_t dot = file_name.rfind('.');
    if (dot == std::string_view::npos) return false;
    const std::string_view tail = file_name.substr(dot + 1);
    if (tail == "so") return dot > 0;
    if (tail.empty() ||
        !std::all_of(tail.begin(), tail.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    file_name.remove_suffix(tail.size() + 1);
  }
}

DeviceProperties read_properties(const polychip_adapter_api* api, int index) {
  polychip_device_properties p{};
  p.struct_size = POLYCHIP_STRUCT_SIZE(polychip_device_properties, compute_units);
  polychip_device_properties_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_device_properties_args, properties);
  a.device = index;
  a.properties = &p;
  check_adapter_status(api->device_properties(&a), api->name, "device_properties",
                       api->last_error_message());
  DeviceProperties out;
  p.device_type[POLYCHIP_DEVICE_TYPE_MAX - 1] = '\0';
  p.name[POLYCHIP_DEVICE_NAME_MAX - 1] = '\0';
  out.device_type = p.device_type;
  out.name = p.name;
  out.memory_bytes = p.memory_bytes;
  for (DType d : kAllDTypes)
    if (p.supported_dtypes & (1ull << static_cast<int>(d))) out.supported_dtypes.push_back(d);
  out.capabilities = p.capabilities;
  out.compute_units = p.compute_units;
  return out;
}

}  // namespace

// An adapter's devices are counted the first time something needs them, not
// when the runtime is built: counting initialises the vendor runtime behind
// it (PoCL's took ~0.1 s of CPU here), which a process that uses only the cpu
// or sim devices, like every rank of a comm job, need not pay.
struct Runtime::Impl {
  struct Adapter {
    const polychip_adapter_api* api;
    int index;  // in Impl::adapters
    std::string origin;
    std::once_flag counted;
    std::vector<Device> devices;
    AdapterInfo info;
    std::string refusal;  // set when a device's type id refused the adapter
  };
  Runtime* runtime = nullptr;  // the owner, which the devices point back to
  RuntimeOptions options;
  // unique_ptr: an Adapter holds a once_flag, which cannot move.
  std::vector<std::unique_ptr<Adapter>> adapters;
  std::once_flag all_counted;
  std::vector<AdapterInfo> infos;       // filled by count_all()
  std::vector<RefusedAdapter> refused;  // at registration, then by count_all()
  std::unique_ptr<Dispatcher> dispatcher;

  // nullptr when no adapter registered under that name (devices not counted).
  Adapter* named(std::string_view name);
  // The adapter's devices, counted once (thread-safe); false when it was refused.
  bool count(Adapter& a);
  void count_all();
  // nullptr when no adapter has that name or it was refused.
  Adapter* counted_adapter(std::string_view name);
};

Runtime::Impl::Adapter* Runtime::Impl::named(std::string_view name) {
  for (auto& a : adapters)
    if (name == a->api->name) return a.get();
  return nullptr;
}

bool Runtime::Impl::count(Adapter& a) {
  std::call_once(a.counted, [&] {
    const polychip_adapter_api* api = a.api;
    polychip_device_count_args c{};
    c.struct_size = POLYCHIP_STRUCT_SIZE(polychip_device_count_args, unavailable_reason);
    polychip_status st = api->device_count(&c);
    if (st != POLYCHIP_OK) {
      const char* msg = api->last_error_message();
      a.info.unavailable_reason = fmt::format("device_count failed: {}", msg ? msg : "");
      return;
    }
    if (c.count == 0)
      a.info.unavailable_reason = c.unavailable_reason ? c.unavailable_reason : "no devices";
    for (int i = 0; i < c.count; ++i) {
      DeviceProperties properties;
      try {
        properties = read_properties(api, i);
      } catch (const Error& e) {
        a.info.unavailable_reason += fmt::format("device {} skipped: {}; ", i, e.message());
        continue;
      }
      // Waivers, patches and hooks are keyed by the id: a bad one refuses the adapter.
      if (auto problem = device_type_id_problem(properties.device_type); !problem.empty()) {
        a.refusal = fmt::format("adapter '{}', device {}: {}; device-type ids are {}", api->name, i,
                                problem, kDeviceTypeIdRule);
        a.devices.clear();
        return;
      }
      a.devices.emplace_back(runtime, api, a.index, i, std::move(properties));
    }
    a.info.device_count = static_cast<int>(a.devices.size());
  });
  return a.refusal.empty();
}

void Runtime::Impl::count_all() {
  std::call_once(all_counted, [&] {
    for (auto& a : adapters) {
      if (count(*a))
        infos.push_back(a->info);
      else
        refused.push_back({a->origin, a->refusal});
    }
  });
}

Runtime::Impl::Adapter* Runtime::Impl::counted_adapter(std::string_view name) {
  Adapter* a = named(name);
  return a && count(*a) ? a : nullptr;
}

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->runtime = this;
  impl_->options = std::move(options);
  auto& opts = impl_->options;

  auto selected = [&](const char* name) {
    if (!opts.selected_adapters) return true;
    const auto& s = *opts.selected_adapters;
    return std::find(s.begin(), s.end(), name) != s.end();
  };
  auto add = [&](const polychip_adapter_api* api, const std::string& origin) {
    if (auto why = check_adapter_table(api); !why.empty()) {
      impl_->refused.push_back({origin, why});
      return false;
    }
    if (impl_->named(api->name)) {
      impl_->refused.push_back(
          {origin, fmt::format("an adapter named '{}' is already registered", api->name)});
      return false;
    }
    if (!selected(api->name)) return false;
    auto adapter = std::make_unique<Impl::Adapter>();
    adapter->api = api;
    adapter->index = static_cast<int>(impl_->adapters.size());
    adapter->origin = origin;
    adapter->info = {api->name,
                     api->vendor,
                     api->adapter_version,
                     api->abi_version.major,
                     api->abi_version.minor,
                     origin,
                     0,
                     ""};
    impl_->adapters.push_back(std::move(adapter));
    return true;
  };

  for (auto entry : opts.builtin_adapters) add(entry(), "built-in");

  for (const auto& dir : opts.adapter_path) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec))
      if (is_shared_library_name(f.path().filename().string())) files.push_back(f.path());
    if (ec) {
      impl_->refused.push_back({dir, "POLYCHIP_ADAPTER_PATH folder unreadable: " + ec.message()});
      continue;
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::string path = f.string();
      try {
        auto lib = std::make_unique<SharedLibrary>(path);
        auto entry = reinterpret_cast<polychip_adapter_get_api_fn>(
            lib->symbol(POLYCHIP_ADAPTER_ENTRY_SYMBOL));
        if (!entry) {
          impl_->refused.push_back({path, fmt::format("no symbol '{}': not a polychip adapter",
                                                      POLYCHIP_ADAPTER_ENTRY_SYMBOL)});
          continue;
        }
        if (add(entry(), path)) lib->keep_loaded();
      } catch (const Error& e) {
        impl_->refused.push_back({path, e.message()});
      }
    }
  }
  if (opts.selected_adapters) {
    for (const auto& name : *opts.selected_adapters)
      if (!impl_->named(name))
        impl_->refused.push_back(
            {"POLYCHIP_ADAPTERS", fmt::format("selects '{}', which no adapter provides", name)});
    // "," or " ": set, yet naming nothing, it left no adapter without a word.
    if (opts.selected_adapters->empty())
      impl_->refused.push_back({"POLYCHIP_ADAPTERS",
                                "names no adapter, so none is loaded: list some (cpu,sim) or "
                                "unset it for every adapter"});
  }

  impl_->dispatcher = std::make_unique<Dispatcher>(*this);
  impl_->dispatcher->set_host_fallback(opts.host_fallback);
  for (const auto& lib : opts.patch_libraries) {
    try {
      impl_->dispatcher->load_patch_library(lib);
    } catch (const Error& e) {
      // A library the user named and that cannot apply must not leave the
      // program running unpatched without a word.
      if (opts.refused_patch_library_throws) throw e.annotate("patch library refused");
      impl_->refused.push_back({lib, "patch library refused: " + e.message()});
    }
  }
}

Runtime::~Runtime() = default;

const std::vector<AdapterInfo>& Runtime::adapters() const {
  impl_->count_all();
  return impl_->infos;
}

const std::vector<RefusedAdapter>& Runtime::refused_adapters() const {
  impl_->count_all();
  return impl_->refused;
}

const polychip_adapter_api* Runtime::adapter_api(std::string_view name) const {
  const Impl::Adapter* a = impl_->counted_adapter(name);
  return a ? a->api : nullptr;
}

std::vector<Device> Runtime::devices() const {
  impl_->count_all();
  std::vector<Device> out;
  for (const auto& a : impl_->adapters)
    if (a->refusal.empty()) out.insert(out.end(), a->devices.begin(), a->devices.end());
  return out;
}

std::optional<Device> Runtime::find_device_type(std::string_view device_type) const {
  auto find_in = [&](Impl::Adapter& a) -> std::optional<Device> {
    if (impl_->count(a))
      for (const auto& d : a.devices)
        if (d.device_type() == device_type) return d;
    return std::nullopt;
  };
  // Device types are globally unique "vendor.model" ids, and an adapter's
  // own are most often "<adapter name>.<model>": that adapter is asked first,
  // so finding sim.faithful does not initialise every vendor runtime before it.
  if (Impl::Adapter* a = impl_->named(device_type.substr(0, device_type.find('.'))))
    if (auto d = find_in(*a)) return d;
  for (auto& a : impl_->adapters)
    if (auto d = find_in(*a)) return d;
  return std::nullopt;
}

std::vector<std::string> Runtime::device_type_conflicts() const {
  std::map<std::string, std::vector<std::string>> adapters_of;  // type -> adapter names
  for (const Device& d : devices()) {
    std::vector<std::string>& names = adapters_of[d.device_type()];
    if (std::find(names.begin(), names.end(), d.adapter_name()) == names.end())
      names.push_back(d.adapter_name());
  }
  std::vector<std::string> conflicts;
  for (const auto& [type, names] : adapters_of)
    if (names.size() > 1)
      conflicts.push_back(
          fmt::format("device type '{}' is reported by adapters {}", type, join(names)));
  return conflicts;
}

Device Runtime::device(std::string_view spec) const {
  std::string_view name = spec;
  int index = 0;
  if (auto colon = spec.rfind(':'); colon != std::string_view::npos) {
    name = spec.substr(0, colon);
    // Digits only: no sign, no spaces, nothing an int cannot hold.
    std::string_view idx = spec.substr(colon + 1);
    auto [end, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), index);
    if (idx.empty() || idx[0] == '-' || ec != std::errc() || end != idx.data() + idx.size())
      throw_error(StatusCode::kInvalidArgument,
                  fmt::format("device '{}': '{}' is not a device index", spec, idx));
  }
  // Why the adapter a spec names ("sim", "sim.faithful") offers no device,
  // so a user need not run `polychip info` to find a mistyped variable.
  auto why_adapter_has_none = [&](std::string_view adapter) -> std::string {
    Impl::Adapter* a = impl_->named(adapter);
    if (!a) {
      if (impl_->options.selected_adapters)
        return fmt::format("; adapter '{}' is not selected by POLYCHIP_ADAPTERS ({})", adapter,
                           join(*impl_->options.selected_adapters));
      // A plugin folder that could not be read may be where it was meant to be.
      std::string unread;
      for (const auto& r : impl_->refused)
        if (std::ranges::find(impl_->options.adapter_path, r.origin) !=
            impl_->options.adapter_path.end())
          unread += fmt::format("; '{}': {}", r.origin, r.reason);
      return unread;
    }
    if (!impl_->count(*a)) return "; " + a->refusal;
    if (!a->devices.empty() || a->info.unavailable_reason.empty()) return "";
    return fmt::format("; adapter '{}' has no devices: {}", adapter, a->info.unavailable_reason);
  };
  if (const Impl::Adapter* a = impl_->counted_adapter(name)) {
    if (index < static_cast<int>(a->devices.size())) return a->devices[index];
    throw_error(StatusCode::kNotFound,
                fmt::format("adapter '{}' has {} device(s); there is no device {}{}", name,
                            a->devices.size(), index, why_adapter_has_none(name)));
  }
  if (spec.find(':') == std::string_view::npos)
    if (auto d = find_device_type(spec)) return *d;
  std::vector<std::string> known;
  for (const auto& d : devices()) known.push_back(d.label() + " (" + d.device_type() + ")");
  throw_error(StatusCode::kNotFound,
              fmt::format("no device '{}'; devices: {}{}", spec,
                          known.empty() ? std::string("none") : join(known),
                          why_adapter_has_none(name.substr(0, name.find('.')))));
}

Dispatcher& Runtime::dispatcher() { return *impl_->dispatcher; }

}  // namespace polychip
