#include "polychip/dispatcher.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <shared_mutex>

#include <fmt/format.h>

#include "adapter_table_check.hpp"
#include "host_fallback.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "polychip/tensor_bounds.hpp"
#include "shared_library.hpp"

namespace polychip {

std::string signature_string(const DTypeSignature& sig) {
  if (sig.empty()) return "*";
  std::string s;
  for (DType d : sig) s += (s.empty() ? "" : ",") + std::string(dtype_name(d));
  return s;
}

namespace {

bool signature_matches(const polychip_dtype* sig, int n, const polychip_tensor* tensors,
                       int num_tensors) {
  for (int k = 0; k < n && k < num_tensors; ++k)
    if (sig[k] != POLYCHIP_DTYPE_ANY && sig[k] != tensors[k].dtype) return false;
  return true;
}

struct Patch {
  uint64_t id;
  std::string device_type;
  std::string op;
  std::optional<DTypeSignature> signature;
  std::vector<polychip_dtype> raw_signature;
  polychip_kernel_fn fn;
  std::string origin;
};

struct Hook {
  uint64_t id;
  std::string device_type;
  std::string hook_point;
  polychip_hook_fn fn;
  std::string origin;
};

// A kernel to call and, for a patch, who patched (empty for the adapter's).
struct ResolvedKernel {
  polychip_kernel_fn fn = nullptr;
  std::string patch_origin;
};

// A kernel candidate for one op on one device: its dtype signature and
// function. Patches come first (newest first), then the adapter's entries.
struct Candidate {
  const polychip_dtype* signature;
  int num_dtypes;
  ResolvedKernel kernel;
};

// What one device can run, indexed by the op's position in the contract.
struct DeviceKernels {
  std::string device_type;
  std::vector<std::vector<const polychip_kernel_entry*>> entries;
  // Candidates per op, rebuilt whenever the patch set changes.
  std::vector<std::vector<Candidate>> resolved;
  uint64_t patch_generation = ~0ull;
};

size_t op_index(const OpSpec& op) { return static_cast<size_t>(&op - op_contract().data()); }

// Hook points polychip's own framework code calls; patch libraries loaded
// from POLYCHIP_PATCHES can only target points declared before they load.
const std::pair<const char*, const char*> kBuiltinHookPoints[] = {
    {"train.before_forward", "before each micro-batch forward pass; payload: none"},
    {"train.after_backward", "after the backward pass, before gradient reduction"},
    {"train.before_optimizer_step", "before the optimizer updates the parameters"},
    {"comm.before_all_reduce", "before a gradient all-reduce is issued on this device"},
};

}  // namespace

struct Dispatcher::Impl {
  Runtime& runtime;
  mutable std::shared_mutex mutex;
  std::map<std::pair<const polychip_adapter_api*, int>, DeviceKernels> kernels;
  uint64_t patch_generation = 0;  // bumped by every patch and restore
  // (device type, op) -> patches, most recent last.
  std::map<std::pair<std::string, std::string>, std::vector<Patch>, std::less<>> patches;
  std::map<std::string, std::string> hook_points;
  std::map<std::pair<std::string, std::string>, Hook, std::less<>> hooks;
  std::map<std::pair<std::string, std::string>, uint64_t> fallbacks;
  std::atomic<bool> host_fallback{false};
  uint64_t next_id = 1;

  explicit Impl(Runtime& r) : runtime(r) {}

  DeviceKernels& kernels_of(const Device& d) {
    auto key = std::make_pair(&d.api(), d.index());
    {
      std::shared_lock lock(mutex);
      if (auto it = kernels.find(key); it != kernels.end()) return it->second;
    }
    polychip_kernel_table_args a{};
    a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_kernel_table_args, num_entries);
    a.device = d.index();
    d.check(d.api().kernel_table(&a), "kernel_table");
    if (a.num_entries > 0 && !a.entries)
      throw_error(StatusCode::kInternal,
                  fmt::format("adapter '{}' kernel_table returned {} entries and no array",
                              d.adapter_name(), a.num_entries));
    DeviceKernels dk;
    dk.device_type = d.device_type();
    dk.entries.resize(op_contract().size());
    for (int i = 0; i < a.num_entries; ++i) {
      const auto& e = a.entries[i];
      if (!e.op || !e.fn || e.num_dtypes < 0 || e.num_dtypes > POLYCHIP_MAX_SIGNATURE)
        throw_error(
            StatusCode::kInternal,
            fmt::format("adapter '{}' kernel_table entry {} is malformed", d.adapter_name(), i));
      if (!find_op(e.op))
        throw_error(StatusCode::kInternal,
                    fmt::format("adapter '{}' registers a kernel for '{}', which is not in the "
                                "op contract",
                                d.adapter_name(), e.op));
      dk.entries[op_index(*find_op(e.op))].push_back(&e);
    }
    std::unique_lock lock(mutex);
    return kernels.emplace(key, std::move(dk)).first->second;
  }

  // Rebuilds the candidate lists of `dk`; called with the lock held.
  void rebuild_candidates(DeviceKernels& dk) {
    dk.resolved.assign(op_contract().size(), {});
    for (size_t i = 0; i < dk.resolved.size(); ++i) {
      auto it = patches.find(std::make_pair(dk.device_type, std::string(op_contract()[i].name)));
      if (it != patches.end())
        for (auto p = it->second.rbegin(); p != it->second.rend(); ++p)
          dk.resolved[i].push_back({p->raw_signature.data(),
                                    static_cast<int>(p->raw_signature.size()),
                                    {p->fn, p->origin}});
      for (const auto* e : dk.entries[i])
        dk.resolved[i].push_back({e->signature, e->num_dtypes, {e->fn, {}}});
    }
    dk.patch_generation = patch_generation;
  }

  // The kernel for a validated call (fn nullptr: none).
  ResolvedKernel resolve(const Device& d, const OpSpec& op, const polychip_tensor* t, int n) {
    DeviceKernels& dk = kernels_of(d);
    const size_t idx = op_index(op);
    {
      std::shared_lock lock(mutex);
      if (dk.patch_generation == patch_generation) {
        for (const auto& c : dk.resolved[idx])
          if (signature_matches(c.signature, c.num_dtypes, t, n)) return c.kernel;
        return {};
      }
    }
    std::unique_lock lock(mutex);
    if (dk.patch_generation != patch_generation) rebuild_candidates(dk);
    for (const auto& c : dk.resolved[idx])
      if (signature_matches(c.signature, c.num_dtypes, t, n)) return c.kernel;
    return {};
  }

  bool device_type_exists(std::string_view type) const {
    return runtime.find_device_type(type).has_value();
  }

  std::string known_device_types() const {
    std::string s;
    for (const auto& d : runtime.devices()) s += (s.empty() ? "" : ", ") + d.device_type();
    return s.empty() ? "none" : s;
  }
};

Dispatcher::Dispatcher(Runtime& runtime) : impl_(std::make_unique<Impl>(runtime)) {
  for (const auto& [name, doc] : kBuiltinHookPoints) impl_->hook_points.emplace(name, doc);
}

Dispatcher::~Dispatcher() = default;

void Dispatcher::call(std::string_view op_name, std::span<const TensorView> tensors,
                      const polychip_op_attrs& attrs, const Stream& stream) {
  const OpSpec* op = find_op(op_name);
  if (!op)
    throw_error(StatusCode::kNotFound,
                fmt::format("unknown op '{}': not in the op contract v1", op_name));
  const Device& device = stream.device();
  if (!device.valid())
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("{}: the stream has no device", op->name));
  if (tensors.size() > POLYCHIP_MAX_OP_TENSORS)
    throw_error(StatusCode::kInvalidArgument, fmt::format("{} takes {} tensors, got {}", op->name,
                                                          op->tensors.size(), tensors.size()));
  polychip_tensor abi[POLYCHIP_MAX_OP_TENSORS];
  const int n = static_cast<int>(tensors.size());
  for (int k = 0; k < n; ++k) {
    const char* name = k < static_cast<int>(op->tensors.size()) ? op->tensors[k].name : "?";
    if (!(tensors[k].device() == device))
      throw_error(StatusCode::kInvalidArgument,
                  fmt::format("{}: tensor '{}' is on {} but the stream is on {}", op->name, name,
                              tensors[k].device().label(), device.label()));
    try {
      abi[k] = tensors[k].to_abi();
    } catch (const Error& e) {
      throw e.annotate(fmt::format("{}: tensor '{}'", op->name, name));
    }
  }
  if (auto why = validate_call(*op, OpCall{std::span(abi, n), &attrs}); !why.empty())
    throw_error(StatusCode::kInvalidArgument, fmt::format("{}: {}", op->name, why));
  // Views of a polychip::Buffer know its size: catch a view outside it here,
  // with the same message on every device, before any adapter code runs.
  for (int k = 0; k < n; ++k)
    if (const auto size = tensors[k].memory_size())
      if (auto why = check_tensor_bounds(abi[k], *size, k); !why.empty())
        throw_error(StatusCode::kInvalidArgument, fmt::format("{}: {}", op->name, why));

  const ResolvedKernel kernel = impl_->resolve(device, *op, abi, n);
  if (!kernel.fn) {
    DTypeSignature sig;
    for (int k = 0; k < n; ++k) sig.push_back(static_cast<DType>(abi[k].dtype));
    if (impl_->host_fallback && std::string_view(device.adapter_name()) != "cpu") {
      auto cpu = impl_->runtime.adapter_api("cpu") ? impl_->runtime.device("cpu") : Device{};
      if (cpu.valid()) {
        const ResolvedKernel cpu_kernel = impl_->resolve(cpu, *op, abi, n);
        if (cpu_kernel.fn) {
          run_on_host(cpu, cpu_kernel.fn, *op, tensors, attrs, stream);
          std::unique_lock lock(impl_->mutex);
          ++impl_->fallbacks[{device.device_type(), op->name}];
          return;
        }
      }
    }
    throw_error(StatusCode::kUnsupported,
                fmt::format("{} ({}) has no kernel for {} with dtypes {}{}", device.label(),
                            device.device_type(), op->name, signature_string(sig),
                            impl_->host_fallback
                                ? " (and the cpu adapter has none either)"
                                : " (host fallback is off: set POLYCHIP_HOST_FALLBACK=1)"));
  }
  polychip_kernel_args args{};
  args.struct_size = POLYCHIP_STRUCT_SIZE(polychip_kernel_args, adapter);
  args.op = op->name;
  args.device = device.index();
  args.stream = stream.handle();
  args.tensors = abi;
  args.num_tensors = n;
  args.attrs = &attrs;
  args.adapter = &device.api();
  // Formatted on failure only: this is every op call's path.
  const auto where = [&] {
    return fmt::format("{} on {} ({})", op->name, device.label(), device.device_type());
  };
  if (!kernel.patch_origin.empty()) {
    // A patch has no message channel of its own, and the adapter's last
    // message may be an earlier call's: name the patch, and pass on the
    // adapter's message only where the call changed it.
    const auto adapter_message = [&] {
      const char* m = device.api().last_error_message();
      return std::string(m ? m : "");
    };
    const std::string before = adapter_message();
    const polychip_status st = kernel.fn(&args);
    if (st == POLYCHIP_OK) return;
    const std::string after = adapter_message();
    throw_error(
        failure_code(st),
        fmt::format("{}: the patched kernel ({}) failed with {}{}", where(), kernel.patch_origin,
                    status_code_name(st), after != before && !after.empty() ? ": " + after : ""));
  }
  const polychip_status st = kernel.fn(&args);
  if (st != POLYCHIP_OK) {
    try {
      device.check(st, op->name);
    } catch (const Error& e) {
      throw e.annotate(where());
    }
  }
}

bool Dispatcher::has_kernel(const Device& device, std::string_view op_name,
                            const DTypeSignature& sig) const {
  const OpSpec* op = find_op(op_name);
  if (!op) return false;
  std::vector<polychip_tensor> t(sig.size());
  for (size_t k = 0; k < sig.size(); ++k) t[k].dtype = static_cast<polychip_dtype>(sig[k]);
  return impl_->resolve(device, *op, t.data(), static_cast<int>(t.size())).fn != nullptr;
}

uint64_t Dispatcher::patch(std::string_view device_type, std::string_view op_name,
                           std::optional<DTypeSignature> signature, polychip_kernel_fn fn,
                           std::string origin) {
  const OpSpec* op = find_op(op_name);
  if (!op)
    throw_error(StatusCode::kNotFound,
                fmt::format("cannot patch '{}': not an op of the contract", op_name));
  if (!impl_->device_type_exists(device_type))
    throw_error(StatusCode::kNotFound,
                fmt::format("cannot patch {} on device type '{}': no such device (known: {})",
                            op->name, device_type, impl_->known_device_types()));
  if (!fn) throw_error(StatusCode::kInvalidArgument, "cannot patch with a null kernel");
  if (signature && signature->size() > op->tensors.size())
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("patch signature has {} dtypes but {} takes {} tensors",
                            signature->size(), op->name, op->tensors.size()));
  Patch p{0, std::string(device_type), op->name, signature, {}, fn, std::move(origin)};
  if (signature)
    for (DType d : *signature) p.raw_signature.push_back(static_cast<polychip_dtype>(d));
  std::unique_lock lock(impl_->mutex);
  p.id = impl_->next_id++;
  uint64_t id = p.id;
  impl_->patches[{p.device_type, p.op}].push_back(std::move(p));
  ++impl_->patch_generation;
  return id;
}

void Dispatcher::restore(uint64_t patch_id) {
  std::unique_lock lock(impl_->mutex);
  for (auto it = impl_->patches.begin(); it != impl_->patches.end(); ++it) {
    auto& v = it->second;
    auto p = std::find_if(v.begin(), v.end(), [&](const Patch& x) { return x.id == patch_id; });
    if (p != v.end()) {
      v.erase(p);
      if (v.empty()) impl_->patches.erase(it);
      ++impl_->patch_generation;
      return;
    }
  }
  throw_error(StatusCode::kNotFound, fmt::format("no active patch with id {}", patch_id));
}

std::vector<PatchInfo> Dispatcher::active_patches() const {
  std::shared_lock lock(impl_->mutex);
  std::vector<PatchInfo> out;
  for (const auto& [key, v] : impl_->patches)
    for (const auto& p : v)
      out.push_back({p.id, p.device_type, p.op, p.signature ? signature_string(*p.signature) : "*",
                     p.origin});
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.id < b.id; });
  return out;
}

void Dispatcher::load_patch_library(const std::string& path) {
  SharedLibrary lib(path);
  auto entry = reinterpret_cast<polychip_patch_get_api_fn>(lib.symbol(POLYCHIP_PATCH_ENTRY_SYMBOL));
  if (!entry)
    throw_error(StatusCode::kNotFound,
                fmt::format("{}: no symbol '{}': not a polychip patch library", path,
                            POLYCHIP_PATCH_ENTRY_SYMBOL));
  const polychip_patch_api* api = entry();
  if (auto why = check_patch_table(api); !why.empty())
    throw_error(StatusCode::kIncompatibleVersion, fmt::format("{}: {}", path, why));
  std::string origin = fmt::format("{} ({})", api->patch_name, path);
  std::vector<uint64_t> patch_ids, hook_ids;
  try {  // all or nothing
    for (int i = 0; i < api->num_patches; ++i) {
      const auto& e = api->patches[i];
      if (!e.device_type || !e.op || e.num_dtypes < 0 || e.num_dtypes > POLYCHIP_MAX_SIGNATURE)
        throw_error(StatusCode::kInvalidArgument, fmt::format("patch entry {} is malformed", i));
      std::optional<DTypeSignature> sig;
      if (e.num_dtypes > 0) {
        sig.emplace();
        for (int k = 0; k < e.num_dtypes; ++k) {
          if (!is_valid_dtype(e.signature[k]))
            throw_error(StatusCode::kInvalidArgument,
                        fmt::format("patch entry {} has unknown dtype code {}", i, e.signature[k]));
          sig->push_back(static_cast<DType>(e.signature[k]));
        }
      }
      patch_ids.push_back(patch(e.device_type, e.op, sig, e.fn, origin));
    }
    for (int i = 0; i < api->num_hooks; ++i) {
      const auto& h = api->hooks[i];
      if (!h.device_type || !h.hook_point)
        throw_error(StatusCode::kInvalidArgument, fmt::format("hook entry {} is malformed", i));
      hook_ids.push_back(register_hook(h.device_type, h.hook_point, h.fn, origin));
    }
  } catch (const Error& e) {
    for (auto id : patch_ids) restore(id);
    for (auto id : hook_ids) unregister_hook(id);
    throw e.annotate(path);
  }
  lib.keep_loaded();
}

void Dispatcher::declare_hook_point(std::string name, std::string description) {
  if (name.empty()) throw_error(StatusCode::kInvalidArgument, "hook point name is empty");
  // Hooks get the name as a C string (polychip_hook_args.hook_point).
  if (name.find('\0') != std::string::npos)
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("hook point name '{}' has a NUL byte", name));
  std::unique_lock lock(impl_->mutex);
  impl_->hook_points[std::move(name)] = std::move(description);
}

uint64_t Dispatcher::register_hook(std::string_view device_type, std::string_view hook_point,
                                   polychip_hook_fn fn, std::string origin) {
  if (!fn) throw_error(StatusCode::kInvalidArgument, "cannot register a null hook");
  if (!impl_->device_type_exists(device_type))
    throw_error(StatusCode::kNotFound,
                fmt::format("cannot hook '{}' for device type '{}': no such device (known: {})",
                            hook_point, device_type, impl_->known_device_types()));
  std::unique_lock lock(impl_->mutex);
  if (!impl_->hook_points.count(std::string(hook_point))) {
    std::string known;
    for (const auto& [n, d] : impl_->hook_points) known += (known.empty() ? "" : ", ") + n;
    throw_error(StatusCode::kNotFound,
                fmt::format("unknown hook point '{}' (declared: {})", hook_point, known));
  }
  auto key = std::make_pair(std::string(device_type), std::string(hook_point));
  if (auto it = impl_->hooks.find(key); it != impl_->hooks.end())
    throw_error(StatusCode::kFailedPrecondition,
                fmt::format("hook point '{}' already has a hook for '{}' from {}", hook_point,
                            device_type, it->second.origin));
  uint64_t id = impl_->next_id++;
  impl_->hooks.emplace(key, Hook{id, key.first, key.second, fn, std::move(origin)});
  return id;
}

void Dispatcher::unregister_hook(uint64_t hook_id) {
  std::unique_lock lock(impl_->mutex);
  for (auto it = impl_->hooks.begin(); it != impl_->hooks.end(); ++it)
    if (it->second.id == hook_id) {
      impl_->hooks.erase(it);
      return;
    }
  throw_error(StatusCode::kNotFound, fmt::format("no registered hook with id {}", hook_id));
}

bool Dispatcher::invoke_hook(std::string_view hook_point, const Device& device, void* payload) {
  polychip_hook_fn fn = nullptr;
  {
    std::shared_lock lock(impl_->mutex);
    if (!impl_->hook_points.count(std::string(hook_point)))
      throw_error(StatusCode::kNotFound,
                  fmt::format("unknown hook point '{}': declare it first", hook_point));
    auto it = impl_->hooks.find(std::make_pair(device.device_type(), std::string(hook_point)));
    if (it == impl_->hooks.end()) return false;
    fn = it->second.fn;
  }
  polychip_hook_args a{};
  a.struct_size = POLYCHIP_STRUCT_SIZE(polychip_hook_args, payload);
  std::string point(hook_point);
  a.hook_point = point.c_str();
  a.device_type = device.device_type().c_str();
  a.device = device.index();
  a.payload = payload;
  polychip_status st = fn(&a);
  if (st != POLYCHIP_OK)
    throw_error(failure_code(st), fmt::format("hook '{}' for {} failed with {}", hook_point,
                                              device.device_type(), status_code_name(st)));
  return true;
}

std::vector<HookPointInfo> Dispatcher::hook_points() const {
  std::shared_lock lock(impl_->mutex);
  std::vector<HookPointInfo> out;
  for (const auto& [n, d] : impl_->hook_points) out.push_back({n, d});
  return out;
}

std::vector<HookInfo> Dispatcher::hooks() const {
  std::shared_lock lock(impl_->mutex);
  std::vector<HookInfo> out;
  for (const auto& [k, h] : impl_->hooks)
    out.push_back({h.id, h.device_type, h.hook_point, h.origin});
  return out;
}

void Dispatcher::set_host_fallback(bool enabled) { impl_->host_fallback = enabled; }
bool Dispatcher::host_fallback() const { return impl_->host_fallback; }

std::vector<FallbackCount> Dispatcher::fallback_counts() const {
  std::shared_lock lock(impl_->mutex);
  std::vector<FallbackCount> out;
  for (const auto& [k, n] : impl_->fallbacks) out.push_back({k.first, k.second, n});
  return out;
}

}  // namespace polychip
