// Adapters and devices of the global runtime (built once from the
// POLYCHIP_* environment variables, like the `polychip` tool's).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "polychip/runtime.hpp"

namespace py = pybind11;

namespace polychip::python {

namespace {

std::vector<std::string> dtype_names(const DeviceProperties& properties) {
  std::vector<std::string> names;
  for (DType dtype : properties.supported_dtypes) names.emplace_back(dtype_name(dtype));
  return names;
}

}  // namespace

void bind_devices(py::module_& m) {
  py::class_<AdapterInfo>(m, "Adapter")
      .def_readonly("name", &AdapterInfo::name)
      .def_readonly("vendor", &AdapterInfo::vendor)
      .def_readonly("version", &AdapterInfo::version)
      .def_readonly("abi_major", &AdapterInfo::abi_major)
      .def_readonly("abi_minor", &AdapterInfo::abi_minor)
      .def_readonly("origin", &AdapterInfo::origin)
      .def_readonly("device_count", &AdapterInfo::device_count)
      .def_readonly("unavailable_reason", &AdapterInfo::unavailable_reason)
      .def("__repr__", [](const AdapterInfo& a) {
        return "<polychip.Adapter " + a.name + " (" + std::to_string(a.device_count) +
               " devices, " + a.origin + ")>";
      });

  py::class_<Device>(m, "Device")
      .def_property_readonly("label", &Device::label)
      .def_property_readonly("adapter",
                             [](const Device& d) { return std::string(d.adapter_name()); })
      .def_property_readonly("index", &Device::index)
      .def_property_readonly("device_type", &Device::device_type)
      .def_property_readonly("name", [](const Device& d) { return d.properties().name; })
      .def_property_readonly("memory_bytes",
                             [](const Device& d) { return d.properties().memory_bytes; })
      .def_property_readonly("compute_units",
                             [](const Device& d) { return d.properties().compute_units; })
      .def_property_readonly("dtypes", [](const Device& d) { return dtype_names(d.properties()); })
      .def_property_readonly(
          "host_visible_memory",
          [](const Device& d) { return d.properties().has(POLYCHIP_CAP_HOST_VISIBLE_MEMORY); })
      .def("__eq__", &Device::operator==, py::is_operator())
      .def("__hash__", [](const Device& d) { return py::hash(py::str(d.label())); })
      .def("__repr__", [](const Device& d) {
        return "<polychip.Device " + d.label() + " " + d.device_type() + ">";
      });

  m.def(
      "adapters", [] { return Runtime::global().adapters(); },
      "The adapters polychip found (built-in and plugins), with or without devices.");
  m.def(
      "devices", [] { return Runtime::global().devices(); }, "Every device of every adapter.");
  m.def(
      "device", [](const std::string& spec) { return Runtime::global().device(spec); },
      py::arg("spec"),
      "A device by 'adapter[:index]' (\"cpu\", \"sim:1\") or by device type (\"sim.faithful\").");
}

}  // namespace polychip::python
