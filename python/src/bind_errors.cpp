// polychip.Error: every polychip::Error reaches Python as this exception,
// with the contract's status code in .code (a polychip.StatusCode) and the
// message without its "CODE: " prefix in .message.
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "polychip/error.hpp"

namespace py = pybind11;

namespace polychip::python {

void bind_errors(py::module_& m) {
  py::enum_<StatusCode>(m, "StatusCode", py::arithmetic())
      .value("OK", StatusCode::kOk)
      .value("INVALID_ARGUMENT", StatusCode::kInvalidArgument)
      .value("NOT_FOUND", StatusCode::kNotFound)
      .value("UNSUPPORTED", StatusCode::kUnsupported)
      .value("OUT_OF_MEMORY", StatusCode::kOutOfMemory)
      .value("UNAVAILABLE", StatusCode::kUnavailable)
      .value("FAILED_PRECONDITION", StatusCode::kFailedPrecondition)
      .value("INCOMPATIBLE_VERSION", StatusCode::kIncompatibleVersion)
      .value("DEADLINE_EXCEEDED", StatusCode::kDeadlineExceeded)
      .value("ABORTED", StatusCode::kAborted)
      .value("DATA_CORRUPTION", StatusCode::kDataCorruption)
      .value("INTERNAL", StatusCode::kInternal);

  // Owned by the module for the interpreter's lifetime (never destroyed:
  // a static py::object would be released after the interpreter is gone).
  static py::handle error_type = py::exception<Error>(m, "Error").release();
  error_type.attr("__module__") = "polychip";
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Error& e) {
      // e.what() as a whole: a C string ends at a NUL byte the message quotes.
      const std::string text =
          status_code_name(static_cast<int32_t>(e.code())) + ": " + e.message();
      py::object error = py::reinterpret_borrow<py::object>(error_type)(py::str(text));
      error.attr("code") = py::cast(e.code());
      error.attr("message") = py::str(e.message());
      PyErr_SetObject(error_type.ptr(), error.ptr());
    }
  });
}

std::string& python_callback_error() {
  thread_local std::string message;
  return message;
}

std::string python_exception_text(const py::error_already_set& e) {
  PyObject* text = PyObject_Str(e.value().ptr());
  if (!text) {
    PyErr_Clear();
    return std::string(Py_TYPE(e.value().ptr())->tp_name) + " (str() of it failed)";
  }
  Py_DECREF(text);
  return e.what();
}

}  // namespace polychip::python
