// The parts of the polychip extension module, one per concept; module.cpp
// calls them in order (errors first: the others translate into them).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "polychip/dtype.hpp"
#include "polychip/error.hpp"

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
void bind_kernel_patches(pybind11::module_& m);  // after bind_adaptation

// Debian's pybind11 2.10 reads NumPy's dtype struct (PyArray_Descr) by
// NumPy 1's layout, which NumPy 2 changed: py::dtype::itemsize(),
// py::array::itemsize() and nbytes(), and the py::array constructors that
// derive strides from the itemsize, are wrong under NumPy 2. The bindings
// read dtypes through their Python attributes and make arrays with these.

// The polychip dtype of a NumPy array's dtype; INVALID_ARGUMENT when none.
DType dtype_of_array(const pybind11::array& array);

// An uninitialised C-contiguous array of `typestr` ("<f4") and `shape`.
pybind11::array empty_array(const char* typestr, const std::vector<pybind11::ssize_t>& shape);

// The tensor's memory as a host pointer, for views without a copy; throws
// UNSUPPORTED naming the device when its memory is not host visible.
void* host_visible_pointer(const Tensor& tensor);

// NumPy's __array_interface__ typestr of a dtype ("<f4"); nullptr for bf16
// and f8, which NumPy has no type for.
const char* numpy_typestr(DType dtype);

// What the last Python callback (a hook or a kernel patch) raised on this
// thread: the HAL sees only a status code, so the binding that called into
// the HAL appends this to the error it throws.
std::string& python_callback_error();
// What a Python callback raised, for python_callback_error(): its type,
// message and traceback (pybind11's what()), or only its type name where
// str() of it fails, as everything does at Python's recursion limit
// (pybind11 2.10's what() then retries without end, overflowing the stack).
std::string python_exception_text(const pybind11::error_already_set& e);
// Calls `f`; a polychip::Error it throws gets the callback's message
// appended when a Python callback failed underneath it.
template <typename F>
auto with_python_callback_errors(F&& f) -> decltype(f()) {
  python_callback_error().clear();
  try {
    return f();
  } catch (const Error& e) {
    if (python_callback_error().empty()) throw;
    throw Error(e.code(), e.message() + ": " + python_callback_error());
  }
}

// A kernel patch made from Python is gone (restore_patch): forget its callable.
void forget_python_kernel(uint64_t patch_id);

}  // namespace polychip::python
