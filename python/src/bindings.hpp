// The parts of the polychip extension module, one per concept; module.cpp
// calls them in order (errors first: the others translate into them).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "polychip/dtype.hpp"

namespace polychip {
class Tensor;
}

namespace polychip::python {

void bind_errors(pybind11::module_& m);
void bind_devices(pybind11::module_& m);
void bind_tensors(pybind11::module_& m);
void bind_streams(pybind11::module_& m);  // before bind_ops: call() takes a stream
void bind_ops(pybind11::module_& m);
void bind_dlpack(pybind11::module_& m);  // after bind_tensors: adds to polychip.Tensor
void bind_comm(pybind11::module_& m);    // after bind_tensors: takes polychip.Tensor
void bind_adaptation(pybind11::module_& m);

// The polychip dtype of a NumPy array's dtype; INVALID_ARGUMENT when none.
DType dtype_of_array(const pybind11::array& array);

// The tensor's memory as a host pointer, for views without a copy; throws
// UNSUPPORTED naming the device when its memory is not host visible.
void* host_visible_pointer(const Tensor& tensor);

}  // namespace polychip::python
