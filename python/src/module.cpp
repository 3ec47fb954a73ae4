// polychip._polychip: the compiled half of the `polychip` Python package.
#include "bindings.hpp"

PYBIND11_MODULE(_polychip, m) {
  m.doc() = "polychip: a hardware abstraction layer for AI chips (see docs/python.md)";
  polychip::python::bind_errors(m);
  polychip::python::bind_devices(m);
  polychip::python::bind_tensors(m);
  polychip::python::bind_dlpack(m);
  polychip::python::bind_streams(m);
  polychip::python::bind_ops(m);
  polychip::python::bind_comm(m);
  polychip::python::bind_adaptation(m);
  polychip::python::bind_kernel_patches(m);
}
