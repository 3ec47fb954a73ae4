// polychip.Tensor and its exchange with NumPy. polychip.tensor(array)
// copies (the adapter ABI has no way to adopt foreign memory);
// numpy.asarray(tensor) is a view without a copy when the device's memory is
// host visible (the cpu adapter's is), through __array_interface__.
// bf16 and f8 have no NumPy dtype: they convert from/to float arrays.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "bindings.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "polychip/tensor.hpp"

namespace py = pybind11;

namespace polychip::python {

namespace {

struct NumpyType {
  DType dtype;
  char kind;  // numpy dtype.kind
  int itemsize;
  const char* typestr;  // __array_interface__ typestr (little-endian host)
};

constexpr NumpyType kNumpyTypes[] = {
    {DType::kF64, 'f', 8, "<f8"}, {DType::kF32, 'f', 4, "<f4"},  {DType::kF16, 'f', 2, "<f2"},
    {DType::kI8, 'i', 1, "|i1"},  {DType::kI32, 'i', 4, "<i4"},  {DType::kI64, 'i', 8, "<i8"},
    {DType::kU8, 'u', 1, "|u1"},  {DType::kBool, 'b', 1, "|b1"},
};

const NumpyType* numpy_type(DType dtype) {
  for (const auto& t : kNumpyTypes)
    if (t.dtype == dtype) return &t;
  return nullptr;  // bf16, f8
}

Device resolve_device(const py::object& device) {
  if (device.is_none()) return Runtime::global().device("cpu");
  if (py::isinstance<py::str>(device)) return Runtime::global().device(device.cast<std::string>());
  if (!py::isinstance<Device>(device))
    throw_error(StatusCode::kInvalidArgument,
                "device is a polychip.Device, a spec string (\"cpu:0\") or None, not " +
                    py::repr(device).cast<std::string>());
  return device.cast<Device>();
}

// The HAL's element count does not check for overflow: a shape whose size
// wraps would get a buffer smaller than the views NumPy makes of it.
Tensor checked_empty(const Device& device, DType dtype, const Shape& shape) {
  uint64_t bytes = dtype_size(dtype);
  for (int64_t d : shape)
    if (d > 0 && __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      throw_error(StatusCode::kInvalidArgument,
                  "shape " + py::repr(py::tuple(py::cast(shape))).cast<std::string>() + " of " +
                      std::string(dtype_name(dtype)) + " needs more than 2^64 bytes");
  return Tensor(device, dtype, shape);
}

Tensor tensor_from_array(const py::object& data, const std::optional<std::string>& dtype_name,
                         const py::object& device) {
  const auto array = py::module_::import("numpy").attr("asarray")(data).cast<py::array>();
  const DType dtype = dtype_name ? parse_dtype(*dtype_name) : dtype_of_array(array);
  const Shape shape(array.shape(), array.shape() + array.ndim());
  const Device target = resolve_device(device);
  if (const NumpyType* t = numpy_type(dtype)) {
    auto contiguous =
        py::module_::import("numpy").attr("ascontiguousarray")(array, py::dtype(t->typestr));
    return Tensor::from_host(target, dtype, shape, contiguous.cast<py::array>().data());
  }
  // No NumPy dtype: round each value from float64 (bit-exact, RNE). NumPy's
  // conversion names what it cannot convert.
  const auto values = py::module_::import("numpy")
                          .attr("ascontiguousarray")(array, py::dtype("<f8"))
                          .cast<py::array_t<double>>();
  std::vector<uint8_t> bytes(static_cast<size_t>(values.size()) * dtype_size(dtype));
  for (py::ssize_t i = 0; i < values.size(); ++i)
    store_from_f64(values.data()[i], bytes.data() + i * dtype_size(dtype), dtype);
  return Tensor::from_host(target, dtype, shape, bytes.data());
}

// A copy, from any device; bf16 and f8 come back as float32.
py::array array_from_tensor(const Tensor& tensor) {
  const std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  if (const NumpyType* t = numpy_type(tensor.dtype())) {
    py::array out = empty_array(t->typestr, shape);
    tensor.copy_to_host(out.mutable_data());
    return out;
  }
  std::vector<uint8_t> bytes(tensor.size_bytes());
  tensor.copy_to_host(bytes.data());
  py::array_t<float> out(shape);
  const size_t size = dtype_size(tensor.dtype());
  for (py::ssize_t i = 0; i < out.size(); ++i)
    out.mutable_data()[i] =
        static_cast<float>(load_as_f64(bytes.data() + i * size, tensor.dtype()));
  return out;
}

// NumPy's array interface over the tensor's own memory: no copy.
py::dict array_interface(const Tensor& tensor) {
  const NumpyType* t = numpy_type(tensor.dtype());
  if (!t)
    throw_error(
        StatusCode::kUnsupported,
        std::string(dtype_name(tensor.dtype())) +
            " has no NumPy dtype, so it cannot be viewed; use Tensor.numpy() (float32 copy)");
  py::dict interface;
  interface["version"] = 3;
  interface["shape"] = py::tuple(py::cast(tensor.shape()));
  interface["typestr"] = t->typestr;
  void* data = host_visible_pointer(tensor);
  // An empty tensor may have no memory, but NumPy takes a null pointer for
  // "no data"; any aligned address does, as nothing is read (read-only).
  alignas(16) static const char empty_storage[16] = {};
  const bool empty = tensor.numel() == 0;
  interface["data"] = py::make_tuple(
      reinterpret_cast<uintptr_t>(empty ? static_cast<const void*>(empty_storage) : data), empty);
  return interface;
}

}  // namespace

const char* numpy_typestr(DType dtype) {
  const NumpyType* t = numpy_type(dtype);
  return t ? t->typestr : nullptr;
}

DType dtype_of_array(const py::array& array) {
  const py::dtype dt = array.dtype();
  const auto kind = dt.attr("kind").cast<std::string>();
  const auto itemsize = dt.attr("itemsize").cast<int>();
  for (const auto& t : kNumpyTypes)
    if (kind == std::string(1, t.kind) && t.itemsize == itemsize) return t.dtype;
  throw_error(StatusCode::kInvalidArgument,
              "NumPy dtype " + py::repr(dt).cast<std::string>() +
                  " has no polychip dtype (float64/32/16, int8/32/64, uint8, bool)");
}

py::array empty_array(const char* typestr, const std::vector<py::ssize_t>& shape) {
  return py::module_::import("numpy").attr("empty")(py::tuple(py::cast(shape)), typestr);
}

void* host_visible_pointer(const Tensor& tensor) {
  if (!tensor.device().properties().has(POLYCHIP_CAP_HOST_VISIBLE_MEMORY))
    throw_error(StatusCode::kUnsupported, "memory of " + tensor.device().label() + " (" +
                                              tensor.device().device_type() +
                                              ") is not host visible; use Tensor.numpy() (a copy)");
  return tensor.buffer().host_pointer();
}

void bind_tensors(py::module_& m) {
  py::class_<Tensor>(m, "Tensor")
      .def_property_readonly("shape",
                             [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
      .def_property_readonly("dtype",
                             [](const Tensor& t) { return std::string(dtype_name(t.dtype())); })
      .def_property_readonly("device", &Tensor::device)
      .def_property_readonly("nbytes", &Tensor::size_bytes)
      .def("numpy", &array_from_tensor, "A NumPy copy of the tensor (bf16 and f8 as float32).")
      .def_property_readonly("__array_interface__", &array_interface)
      .def("__repr__", [](const Tensor& t) {
        return "<polychip.Tensor " + std::string(dtype_name(t.dtype())) +
               py::str(py::tuple(py::cast(t.shape()))).cast<std::string>() + " on " +
               t.device().label() + ">";
      });

  m.def(
      "empty",
      [](const std::vector<int64_t>& shape, const std::string& dtype, const py::object& device) {
        return checked_empty(resolve_device(device), parse_dtype(dtype), shape);
      },
      py::arg("shape"), py::arg("dtype") = "f32", py::arg("device") = py::none(),
      "An uninitialised row-major tensor; device is a Device, a spec string or None (cpu).");
  m.def("tensor", &tensor_from_array, py::arg("array"), py::arg("dtype") = py::none(),
        py::arg("device") = py::none(),
        "A tensor holding a copy of `array` (anything NumPy converts), on `device` (cpu by "
        "default).");
}

}  // namespace polychip::python
