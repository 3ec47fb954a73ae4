// DLPack export (__dlpack__, __dlpack_device__): any DLPack consumer
// (numpy.from_dlpack, torch.from_dlpack) views a tensor's memory without a
// copy when it is host visible. The capsule owns a reference to the
// tensor's buffer, so the memory lives as long as the consumer's view.
// Import is not offered: the adapter ABI cannot adopt foreign memory.
#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "polychip/error.hpp"
#include "polychip/tensor.hpp"

namespace py = pybind11;

namespace polychip::python {

namespace {

constexpr const char* kCapsuleName = "dltensor";

struct Export {
  Tensor tensor;  // shares the buffer: keeps the memory alive
  std::vector<int64_t> shape;
  DLManagedTensor managed{};
};

std::optional<DLDataType> dlpack_dtype(DType dtype) {
  const auto bits = static_cast<uint8_t>(dtype_size(dtype) * 8);
  switch (dtype) {
    case DType::kF64:
    case DType::kF32:
    case DType::kF16:
      return DLDataType{kDLFloat, bits, 1};
    case DType::kBF16:
      return DLDataType{kDLBfloat, bits, 1};
    case DType::kI8:
    case DType::kI32:
    case DType::kI64:
      return DLDataType{kDLInt, bits, 1};
    case DType::kU8:
      return DLDataType{kDLUInt, bits, 1};
    default:
      return std::nullopt;  // f8 and bool have no DLPack 0.6 type code
  }
}

py::capsule to_dlpack(const Tensor& tensor, const py::object& /*stream: host memory, no stream*/) {
  const auto dtype = dlpack_dtype(tensor.dtype());
  if (!dtype)
    throw_error(StatusCode::kUnsupported,
                std::string(dtype_name(tensor.dtype())) + " has no DLPack dtype");
  void* data = host_visible_pointer(tensor);
  auto* exported = new Export{tensor, tensor.shape(), {}};
  DLTensor& dl = exported->managed.dl_tensor;
  dl.data = data;
  dl.device = DLDevice{kDLCPU, 0};
  dl.ndim = static_cast<int32_t>(exported->shape.size());
  dl.dtype = *dtype;
  dl.shape = exported->shape.data();
  dl.strides = nullptr;  // compact row-major
  dl.byte_offset = 0;
  exported->managed.manager_ctx = exported;
  exported->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<Export*>(self->manager_ctx);
  };
  // A consumer renames the capsule to "used_dltensor" and calls the deleter
  // itself; a capsule never consumed frees the export here.
  PyObject* capsule = PyCapsule_New(&exported->managed, kCapsuleName, [](PyObject* self) {
    if (PyCapsule_IsValid(self, kCapsuleName)) {
      auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(self, kCapsuleName));
      managed->deleter(managed);
    }
  });
  if (!capsule) {
    delete exported;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

}  // namespace

void bind_dlpack(py::module_& m) {
  auto tensor_class = py::reinterpret_borrow<py::class_<Tensor>>(py::type::of<Tensor>());
  tensor_class
      .def("__dlpack__", &to_dlpack, py::kw_only(), py::arg("stream") = py::none(),
           "A DLPack capsule viewing the tensor's memory (host-visible memory only).")
      .def("__dlpack_device__", [](const Tensor& tensor) {
        host_visible_pointer(tensor);  // refuses memory a CPU consumer cannot read
        return py::make_tuple(static_cast<int>(kDLCPU), 0);
      });
}

}  // namespace polychip::python
