// The parts of the polychip extension module, one per concept; module.cpp
// calls them in order (errors first: the others translate into them).
#pragma once

#include <pybind11/pybind11.h>

namespace polychip::python {

void bind_errors(pybind11::module_& m);
void bind_devices(pybind11::module_& m);
void bind_tensors(pybind11::module_& m);
void bind_ops(pybind11::module_& m);

}  // namespace polychip::python
