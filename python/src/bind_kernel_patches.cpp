// Kernel patches written in Python (monkey-patch mode, docs/python.md):
// polychip.patch_kernel("sim.faithful", "relu", fn) makes the dispatcher run
// fn(*tensors, **attributes) for that op on every device of that type, until
// restore_patch(id). The tensors come as NumPy arrays in contract order,
// inputs read-only, outputs written in place: host copies on every device,
// taken after the stream's earlier work, the outputs' written back when the
// kernel has returned. bf16 and f8, which NumPy has no type for, come as
// float32 and are rounded back (round to nearest even). The arrays live for
// the call only: a kernel that raises, or keeps an array (or a view of one),
// fails the call and nothing is written back. Views of host-visible device
// memory would be cheaper, but their writes land before the kernel's
// failure is known, and a view kept past the call writes into (or reads)
// the tensor's memory afterwards, which the HAL may have freed.
//
// The HAL calls kernels through a C function pointer without user data, so
// one trampoline finds the callable: of the Python patches of (device type,
// op), the most recent whose signature matches the call; that is the patch
// the dispatcher chose, as it tries patches most recent first.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/runtime.hpp"

namespace py = pybind11;

namespace polychip::python {
namespace {

struct PythonKernel {
  uint64_t id;
  std::optional<DTypeSignature> signature;  // none: every dtype
  py::function fn;
};

using KernelKey = std::pair<std::string, std::string>;  // device type, op

struct PythonKernels {
  std::mutex mutex;
  std::map<KernelKey, std::vector<PythonKernel>> by_key;  // most recent last
};

PythonKernels& python_kernels() {
  static auto* kernels = new PythonKernels;  // never destroyed: the HAL may outlive the module
  return *kernels;
}

[[noreturn]] void fail(const std::string& why) { throw std::runtime_error(why); }

void check_adapter(const polychip_adapter_api& api, polychip_status status, const char* what) {
  if (status == POLYCHIP_OK) return;
  const char* message = api.last_error_message ? api.last_error_message() : nullptr;
  fail(std::string(what) + " failed (status " + std::to_string(status) + ")" +
       (message && *message ? std::string(": ") + message : std::string()));
}

polychip_device_properties properties_of(const polychip_kernel_args& args) {
  polychip_device_properties properties{};
  properties.struct_size = sizeof properties;
  polychip_device_properties_args query{sizeof query, args.device, &properties};
  check_adapter(*args.adapter, args.adapter->device_properties(&query), "device_properties");
  return properties;
}

// As the dispatcher matches: the signature's dtypes against the first tensors.
bool matches(const std::optional<DTypeSignature>& signature, const polychip_kernel_args& args) {
  if (!signature) return true;
  for (size_t k = 0; k < signature->size() && k < static_cast<size_t>(args.num_tensors); ++k)
    if (static_cast<polychip_dtype>((*signature)[k]) != args.tensors[k].dtype) return false;
  return true;
}

py::function find_callable(const polychip_kernel_args& args, const std::string& device_type) {
  const KernelKey key{device_type, args.op};
  auto& kernels = python_kernels();
  std::lock_guard lock(kernels.mutex);
  auto it = kernels.by_key.find(key);
  if (it != kernels.by_key.end())
    for (auto k = it->second.rbegin(); k != it->second.rend(); ++k)
      if (matches(k->signature, args)) return k->fn;
  fail("no Python kernel for " + std::string(args.op) + " on " + key.first);
}

// One tensor of the call on the host: a copy of the bytes from its lowest
// to its highest element, where the kernel reads and writes them.
class HostTensor {
 public:
  HostTensor(const polychip_kernel_args& args, int index, bool output)
      : api_(*args.adapter),
        t_(args.tensors[index]),
        dtype_(static_cast<DType>(t_.dtype)),
        element_(dtype_size(dtype_)),
        output_(output) {
    int64_t lowest = 0, highest = 0;
    for (int d = 0; d < t_.rank; ++d) {
      if (t_.shape[d] == 0) empty_ = true;
      const int64_t reach = t_.strides[d] * (t_.shape[d] - 1);
      (reach < 0 ? lowest : highest) += reach;
    }
    lowest_ = lowest;
    if (empty_) return;
    const int64_t first_byte = static_cast<int64_t>(t_.byte_offset) + lowest * element_;
    if (first_byte < 0)
      fail(std::string(args.op) + ": tensor " + std::to_string(index) +
           " reaches before its memory");
    first_byte_ = static_cast<uint64_t>(first_byte);
    span_bytes_ = static_cast<uint64_t>(highest - lowest + 1) * element_;
    copy_ = empty_array("|u1", {static_cast<py::ssize_t>(span_bytes_)});
    span_ = static_cast<uint8_t*>(copy_.mutable_data());
    transfer(POLYCHIP_COPY_DEVICE_TO_HOST);
  }

  // The NumPy array the Python kernel sees.
  py::array array() {
    std::vector<py::ssize_t> shape(t_.shape, t_.shape + t_.rank);
    if (empty_) {
      const char* typestr = numpy_typestr(dtype_);
      return empty_array(typestr ? typestr : "<f4", shape);
    }
    py::array out;
    if (const char* typestr = numpy_typestr(dtype_)) {
      std::vector<py::ssize_t> strides(t_.strides, t_.strides + t_.rank);
      for (auto& s : strides) s *= element_;
      out = py::array(py::dtype(typestr), shape, strides, element(0), copy_);
    } else {
      converted_ = py::array_t<float>(shape);
      is_converted_ = true;
      float* values = converted_.mutable_data();
      for_each_element([&](int64_t i, int64_t offset) {
        values[i] = static_cast<float>(load_as_f64(element(offset), dtype_));
      });
      out = converted_;
    }
    if (!output_) out.attr("setflags")(py::arg("write") = false);
    return out;
  }

  // Whether something still holds the kernel's array or a view of it, once
  // the call's tuple of arrays is gone: every view's base is the host
  // buffer (NumPy makes a view of a view point at the array owning the
  // memory), which only this object holds otherwise.
  bool kept() const {
    if (empty_) return false;
    return Py_REFCNT((is_converted_ ? converted_ : copy_).ptr()) > 1;
  }

  // After the kernel: an output's values go back to the device.
  void finish() {
    if (!output_ || empty_) return;
    if (is_converted_) {
      const float* values = converted_.data();
      for_each_element(
          [&](int64_t i, int64_t offset) { store_from_f64(values[i], element(offset), dtype_); });
    }
    transfer(POLYCHIP_COPY_HOST_TO_DEVICE);
  }

 private:
  uint8_t* element(int64_t offset) { return span_ + (offset - lowest_) * element_; }

  // f(row-major index, element offset) for every element.
  template <typename F>
  void for_each_element(F f) {
    std::vector<int64_t> index(t_.rank, 0);
    int64_t count = 1;
    for (int d = 0; d < t_.rank; ++d) count *= t_.shape[d];
    for (int64_t i = 0; i < count; ++i) {
      int64_t offset = 0;
      for (int d = 0; d < t_.rank; ++d) offset += index[d] * t_.strides[d];
      f(i, offset);
      for (int d = t_.rank - 1; d >= 0 && ++index[d] == t_.shape[d]; --d) index[d] = 0;
    }
  }

  void transfer(polychip_copy_kind kind) {
    polychip_copy_args copy{};
    copy.struct_size = sizeof copy;
    copy.kind = kind;
    copy.size_bytes = span_bytes_;
    if (kind == POLYCHIP_COPY_DEVICE_TO_HOST) {
      copy.src_memory = t_.memory;
      copy.src_offset = first_byte_;
      copy.dst_host = span_;
    } else {
      copy.src_host = span_;
      copy.dst_memory = t_.memory;
      copy.dst_offset = first_byte_;
    }
    check_adapter(api_, api_.copy(&copy), "copy");
  }

  const polychip_adapter_api& api_;
  const polychip_tensor& t_;
  DType dtype_;
  int64_t element_;
  bool output_;
  bool empty_ = false;
  int64_t lowest_ = 0;  // element offset of the lowest element (<= 0)
  uint64_t first_byte_ = 0;
  uint64_t span_bytes_ = 0;
  uint8_t* span_ = nullptr;    // host address of the lowest element
  py::array copy_;             // the kernel's array views it (not bf16 and f8)
  bool is_converted_ = false;  // bf16 and f8: the kernel sees converted_ (float32)
  py::array_t<float> converted_;
};

py::dict attributes_of(const OpSpec& spec, const polychip_op_attrs& attrs) {
  py::dict out;
  for (const auto& a : spec.attrs)
    out[py::str(a.name)] =
        a.is_float ? py::cast(attrs.floats[a.slot]) : py::cast(attrs.ints[a.slot]);
  return out;
}

void run_python_kernel(const polychip_kernel_args& args) {
  const OpSpec* spec = find_op(args.op);
  if (!spec) fail(std::string("unknown op ") + args.op);
  const polychip_device_properties properties = properties_of(args);
  py::function fn = find_callable(args, properties.device_type);
  polychip_stream_args wait{sizeof wait, args.stream};
  check_adapter(*args.adapter, args.adapter->stream_synchronize(&wait), "stream_synchronize");
  std::vector<HostTensor> tensors;
  tensors.reserve(args.num_tensors);
  {
    py::tuple arrays(args.num_tensors);
    for (int k = 0; k < args.num_tensors; ++k) {
      const bool output = k < static_cast<int>(spec->tensors.size()) && spec->tensors[k].is_output;
      tensors.emplace_back(args, k, output);
      arrays[k] = tensors.back().array();
    }
    fn(*arrays, **attributes_of(*spec, *args.attrs));
  }
  for (size_t k = 0; k < tensors.size(); ++k) {
    if (!tensors[k].kept()) continue;
    py::module_::import("gc").attr("collect")();  // a cycle the kernel dropped may hold it
    if (tensors[k].kept())
      fail("it kept tensor " + std::to_string(k) + " (or a view of it) after returning, but " +
           "the arrays are valid during the call only, so nothing was written back; keep a " +
           "copy (numpy.array(a)) instead");
  }
  for (auto& t : tensors) t.finish();
}

polychip_status python_kernel_trampoline(const polychip_kernel_args* args) {
  py::gil_scoped_acquire gil;
  try {
    run_python_kernel(*args);
    return POLYCHIP_OK;
  } catch (py::error_already_set& e) {
    python_callback_error() =
        std::string("Python kernel for ") + args->op + " raised " + python_exception_text(e);
  } catch (const std::exception& e) {
    python_callback_error() = std::string("Python kernel for ") + args->op + ": " + e.what();
  }
  return POLYCHIP_INTERNAL;
}

// How the trampoline calls a kernel for `spec`: "fn(x, y, *, alpha)".
std::string kernel_call(const OpSpec& spec) {
  std::string call = "fn(";
  for (size_t k = 0; k < spec.tensors.size(); ++k)
    call += (k ? ", " : "") + std::string(spec.tensors[k].name);
  if (!spec.attrs.empty()) call += ", *";
  for (const auto& a : spec.attrs) call += ", " + std::string(a.name);
  return call + ")";
}

// A callable that cannot take the op's arguments (its tensors by position,
// every attribute by name) is refused when patched, not at the op's first
// call. Python binds the call, so (*args, **kwargs) and defaults count as
// they would; a callable whose signature Python cannot read (some
// builtins) is not checked.
void check_kernel_signature(const py::object& fn, const std::string& op) {
  const OpSpec* spec = find_op(op);
  if (!spec) return;  // the dispatcher names the unknown op
  py::object signature;
  try {
    signature = py::module_::import("inspect").attr("signature")(fn);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_ValueError) && !e.matches(PyExc_TypeError)) throw;
    return;
  }
  py::list tensors;
  for (size_t k = 0; k < spec->tensors.size(); ++k) tensors.append(py::none());
  py::dict attributes;
  for (const auto& a : spec->attrs) attributes[py::str(a.name)] = py::none();
  try {
    signature.attr("bind")(*tensors, **attributes);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    throw_error(StatusCode::kInvalidArgument,
                "patch_kernel: " + py::repr(fn).cast<std::string>() + " cannot be " + op +
                    "'s kernel: " + py::str(e.value()).cast<std::string>() + "; " + op +
                    "'s kernel is called as " + kernel_call(*spec) + ", and its signature is " +
                    py::str(signature).cast<std::string>());
  }
}

uint64_t patch_kernel(const std::string& device_type, const std::string& op, py::object fn,
                      std::optional<std::vector<std::string>> dtypes) {
  if (!PyCallable_Check(fn.ptr()))
    throw_error(StatusCode::kInvalidArgument,
                "patch_kernel: fn is not callable: " + py::repr(fn).cast<std::string>());
  check_kernel_signature(fn, op);
  std::optional<DTypeSignature> signature;
  if (dtypes) {
    signature.emplace();
    for (const auto& name : *dtypes) signature->push_back(parse_dtype(name));
  }
  // The GIL is held from here to the registration, so no call reaches the
  // trampoline before the callable is there.
  const uint64_t id =
      Runtime::global().dispatcher().patch(device_type, op, signature, python_kernel_trampoline,
                                           "python: " + py::repr(fn).cast<std::string>());
  auto& kernels = python_kernels();
  std::lock_guard lock(kernels.mutex);
  kernels.by_key[{device_type, op}].push_back(
      {id, signature, py::reinterpret_borrow<py::function>(fn)});
  return id;
}

}  // namespace

void forget_python_kernel(uint64_t patch_id) {
  auto& kernels = python_kernels();
  std::lock_guard lock(kernels.mutex);
  for (auto it = kernels.by_key.begin(); it != kernels.by_key.end(); ++it) {
    auto& v = it->second;
    for (auto k = v.begin(); k != v.end(); ++k)
      if (k->id == patch_id) {
        v.erase(k);
        if (v.empty()) kernels.by_key.erase(it);
        return;
      }
  }
}

void bind_kernel_patches(py::module_& m) {
  m.def("patch_kernel", &patch_kernel, py::arg("device_type"), py::arg("op"), py::arg("fn"),
        py::arg("dtypes") = py::none(),
        "Runs fn(*tensors, **attributes) as op's kernel on every device of device_type "
        "(optionally only where the first tensors' dtypes are `dtypes`), until "
        "restore_patch(id). The "
        "tensors are NumPy arrays in contract order, inputs read-only, outputs written in "
        "place; bf16 and f8 as float32. Returns the patch's id; patches() lists it with "
        "origin 'python: ...'.");
}

}  // namespace polychip::python
