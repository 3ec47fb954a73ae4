// polychip.Stream and polychip.Event: asynchronous op calls
// (polychip.call(..., stream=s)) and their ordering and timing.
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "python_stream.hpp"

namespace py = pybind11;

namespace polychip::python {

void bind_streams(py::module_& m) {
  py::class_<PythonStream>(m, "Stream")
      .def(py::init<const Device&>(), py::arg("device"))
      .def_property_readonly("device", [](const PythonStream& s) { return s.stream.device(); })
      .def("synchronize", &PythonStream::synchronize,
           "Waits for every call queued on the stream, then releases their tensors.");

  py::class_<Event>(m, "Event")
      .def(py::init<const Device&>(), py::arg("device"))
      .def(
          "record", [](Event& e, const PythonStream& s) { e.record(s.stream); }, py::arg("stream"))
      .def(
          "wait", [](const Event& e, const PythonStream& s) { e.wait_on(s.stream); },
          py::arg("stream"), "Work queued on `stream` after this call waits for the event.")
      .def("query", &Event::query)
      .def("synchronize", &Event::synchronize, py::call_guard<py::gil_scoped_release>())
      .def_static("elapsed_ms", &Event::elapsed_ms, py::arg("start"), py::arg("end"));
}

}  // namespace polychip::python
