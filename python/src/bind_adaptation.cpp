// Both adaptation modes of the HAL from Python (docs/python.md):
//  - in place: hook points, and Python callables registered as the hook of
//    a device type at a point (removable); invoke_hook() runs it, as the
//    training loop does at train.before_forward and the others;
//  - monkey-patch: C kernels from a patch library (patch_abi.h), listed with
//    their origin and restorable one by one; Python kernels are in
//    bind_kernel_patches.cpp.
// The HAL calls hooks through a C function pointer without user data, so one
// trampoline finds the callable by (device type, hook point).
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "bindings.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"

namespace py = pybind11;

namespace polychip::python {
namespace {

using HookKey = std::pair<std::string, std::string>;  // device type, hook point

struct PythonHooks {
  std::mutex mutex;
  std::map<HookKey, py::function> callables;
  std::map<uint64_t, HookKey> keys;  // hook id -> its callable
};

PythonHooks& python_hooks() {
  static auto* hooks = new PythonHooks;  // never destroyed: the HAL may outlive the module
  return *hooks;
}

polychip_status python_hook_trampoline(const polychip_hook_args* args) {
  py::gil_scoped_acquire gil;
  py::function fn;
  {
    std::lock_guard lock(python_hooks().mutex);
    auto it = python_hooks().callables.find({args->device_type, args->hook_point});
    if (it == python_hooks().callables.end()) return POLYCHIP_NOT_FOUND;
    fn = it->second;
  }
  try {
    fn(std::string(args->hook_point), std::string(args->device_type), args->device);
    return POLYCHIP_OK;
  } catch (py::error_already_set& e) {
    python_callback_error() = python_exception_text(e);
    return POLYCHIP_INTERNAL;
  }
}

Dispatcher& dispatcher() { return Runtime::global().dispatcher(); }

}  // namespace

void bind_adaptation(py::module_& m) {
  m.def(
      "hook_points",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& p : dispatcher().hook_points()) out.emplace_back(p.name, p.description);
        return out;
      },
      "The declared hook points: (name, description) pairs.");
  m.def(
      "declare_hook_point",
      [](std::string name, std::string description) {
        dispatcher().declare_hook_point(std::move(name), std::move(description));
      },
      py::arg("name"), py::arg("description"));
  m.def(
      "register_hook",
      [](const std::string& device_type, const std::string& hook_point, py::function fn) {
        if (!fn) throw_error(StatusCode::kInvalidArgument, "register_hook: fn is not callable");
        auto& hooks = python_hooks();
        const HookKey key{device_type, hook_point};
        std::optional<py::function> previous;  // a registration the HAL will keep
        {
          std::lock_guard lock(hooks.mutex);
          if (auto it = hooks.callables.find(key); it != hooks.callables.end())
            previous = it->second;
          hooks.callables[key] = fn;
        }
        try {
          const uint64_t id =
              dispatcher().register_hook(device_type, hook_point, python_hook_trampoline,
                                         "python: " + py::repr(fn).cast<std::string>());
          std::lock_guard lock(hooks.mutex);
          hooks.keys[id] = key;
          return id;
        } catch (...) {
          std::lock_guard lock(hooks.mutex);
          if (previous)
            hooks.callables[key] = *previous;
          else
            hooks.callables.erase(key);
          throw;
        }
      },
      py::arg("device_type"), py::arg("hook_point"), py::arg("fn"),
      "Runs fn(hook_point, device_type, device_index) where the framework invokes hook_point on "
      "a device of device_type. Returns the hook's id (unregister_hook).");
  m.def(
      "unregister_hook",
      [](uint64_t id) {
        dispatcher().unregister_hook(id);
        auto& hooks = python_hooks();
        std::lock_guard lock(hooks.mutex);
        if (auto it = hooks.keys.find(id); it != hooks.keys.end()) {
          hooks.callables.erase(it->second);
          hooks.keys.erase(it);
        }
      },
      py::arg("hook_id"));
  m.def(
      "hooks",
      [] {
        std::vector<py::dict> out;
        for (const auto& h : dispatcher().hooks())
          out.push_back(py::dict(py::arg("id") = h.id, py::arg("device_type") = h.device_type,
                                 py::arg("hook_point") = h.hook_point,
                                 py::arg("origin") = h.origin));
        return out;
      },
      "Registered hooks (C and Python) with their origin.");
  m.def(
      "invoke_hook",
      [](const std::string& hook_point, const Device& device) {
        return with_python_callback_errors(
            [&] { return dispatcher().invoke_hook(hook_point, device); });
      },
      py::arg("hook_point"), py::arg("device"),
      "Runs the hook of device's type at hook_point; False when none is registered.");
  m.def(
      "load_patch_library", [](const std::string& path) { dispatcher().load_patch_library(path); },
      py::arg("path"), "Loads a C patch library (patch_abi.h): its kernels and hooks.");
  m.def(
      "patches",
      [] {
        std::vector<py::dict> out;
        for (const auto& p : dispatcher().active_patches())
          out.push_back(py::dict(py::arg("id") = p.id, py::arg("device_type") = p.device_type,
                                 py::arg("op") = p.op, py::arg("signature") = p.signature,
                                 py::arg("origin") = p.origin));
        return out;
      },
      "Active kernel patches with their origin.");
  m.def(
      "restore_patch",
      [](uint64_t id) {
        dispatcher().restore(id);
        forget_python_kernel(id);
      },
      py::arg("patch_id"), "Puts the original kernel back (a C or a Python patch).");
}

}  // namespace polychip::python
