// The dispatcher: resolves (device type, op, dtype signature) to a kernel
// and runs it, after validating the call against the op contract.
//
// Adaptation modes (see docs/architecture.md):
//  - monkey-patch: patch() replaces one op's kernel for one device type (and
//    optionally one dtype signature) until restore(); every active patch is
//    listed with its origin.
//  - in-place: framework code declares named hook points and calls
//    invoke_hook() with the current device; vendor code registers a hook for
//    its device type. Unknown hook points and device types fail loudly.
//  - host fallback: when enabled, an op the device lacks runs on the cpu
//    adapter (copy in, run, copy out); each fallback is counted.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "polychip/memory.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/patch_abi.h"
#include "polychip/tensor.hpp"

namespace polychip {

class Runtime;

using DTypeSignature = std::vector<DType>;

struct PatchInfo {
  uint64_t id = 0;
  std::string device_type;
  std::string op;
  std::string signature;  // "f32,f32,f32,f32" or "*"
  std::string origin;     // who patched: a name or a library path
};

struct HookPointInfo {
  std::string name;
  std::string description;
};

struct HookInfo {
  uint64_t id = 0;
  std::string device_type;
  std::string hook_point;
  std::string origin;
};

struct FallbackCount {
  std::string device_type;
  std::string op;
  uint64_t calls = 0;
};

class Dispatcher {
 public:
  explicit Dispatcher(Runtime& runtime);
  ~Dispatcher();

  // Runs `op` on the stream's device. tensors: inputs then outputs, in
  // contract order. Throws INVALID_ARGUMENT naming the bad argument,
  // NOT_FOUND for an unknown op, UNSUPPORTED when the device has no kernel
  // (and fallback is off), or the adapter's error.
  void call(std::string_view op, std::span<const TensorView> tensors,
            const polychip_op_attrs& attrs, const Stream& stream);
  void call(std::string_view op, std::initializer_list<TensorView> tensors,
            const polychip_op_attrs& attrs, const Stream& stream) {
    call(op, std::span<const TensorView>(tensors.begin(), tensors.size()), attrs, stream);
  }
  // Whether `device` has a kernel (its own or patched) for op + signature.
  bool has_kernel(const Device& device, std::string_view op, const DTypeSignature& sig) const;

  // --- monkey-patch mode ---
  uint64_t patch(std::string_view device_type, std::string_view op,
                 std::optional<DTypeSignature> signature, polychip_kernel_fn fn,
                 std::string origin);
  void restore(uint64_t patch_id);
  std::vector<PatchInfo> active_patches() const;
  // Loads a patch library (patches and hooks); throws naming the file.
  void load_patch_library(const std::string& path);

  // --- in-place mode ---
  void declare_hook_point(std::string name, std::string description);
  uint64_t register_hook(std::string_view device_type, std::string_view hook_point,
                         polychip_hook_fn fn, std::string origin);
  void unregister_hook(uint64_t hook_id);
  // Runs the hook registered for device's type at `hook_point`; returns
  // false when none is registered (the framework's default path runs).
  bool invoke_hook(std::string_view hook_point, const Device& device, void* payload = nullptr);
  std::vector<HookPointInfo> hook_points() const;
  std::vector<HookInfo> hooks() const;

  // --- host fallback ---
  void set_host_fallback(bool enabled);
  bool host_fallback() const;
  std::vector<FallbackCount> fallback_counts() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string signature_string(const DTypeSignature& sig);

}  // namespace polychip
