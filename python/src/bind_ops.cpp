// Every op of the contract by name: polychip.call("gemm", a, b, c, y,
// alpha=2.0) runs it on the tensors' device and waits for it, or, with
// stream=polychip.Stream, queues it there without waiting. Tensors are
// inputs then outputs in contract order; keyword arguments are the op's
// attributes by their contract names (unnamed ones keep their defaults).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "python_stream.hpp"

namespace py = pybind11;

namespace polychip::python {

namespace {

const OpSpec& op_spec(const std::string& op) {
  const OpSpec* spec = find_op(op);
  if (!spec)
    throw_error(StatusCode::kNotFound,
                "no op '" + op + "' in the contract (polychip.ops() lists them)");
  return *spec;
}

std::string attribute_names(const OpSpec& spec) {
  std::string names;
  for (const auto& a : spec.attrs) names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names.empty() ? "none" : names;
}

polychip_op_attrs attrs_from_kwargs(const OpSpec& spec, const py::kwargs& kwargs) {
  polychip_op_attrs attrs = default_attrs(spec);
  for (const auto& [key, value] : kwargs) {
    const std::string name = py::str(key);
    const AttrSpec* attr = nullptr;
    for (const auto& a : spec.attrs)
      if (name == a.name) attr = &a;
    if (!attr)
      throw_error(StatusCode::kInvalidArgument,
                  std::string(spec.name) + " has no attribute '" + name +
                      "' (its attributes: " + attribute_names(spec) + ")");
    try {
      if (attr->is_float)
        attrs.floats[attr->slot] = value.cast<double>();
      else
        attrs.ints[attr->slot] = value.cast<int64_t>();
    } catch (const py::cast_error&) {
      throw_error(StatusCode::kInvalidArgument,
                  std::string(spec.name) + " attribute '" + name + "' takes " +
                      (attr->is_float ? "a float" : "a 64-bit integer") + ", not " +
                      py::repr(value).cast<std::string>());
    }
  }
  return attrs;
}

void call_op(const std::string& op, const py::args& args, py::kwargs kwargs) {
  const OpSpec& spec = op_spec(op);
  PythonStream* stream = nullptr;  // none: a stream of its own, waited for
  if (kwargs.contains("stream")) {
    const py::object given = kwargs["stream"];
    if (!given.is_none() && !py::isinstance<PythonStream>(given))
      throw_error(StatusCode::kInvalidArgument, op + " stream= takes a polychip.Stream, not " +
                                                    py::repr(given).cast<std::string>());
    stream = given.cast<PythonStream*>();
    PyDict_DelItemString(kwargs.ptr(), "stream");
  }
  const polychip_op_attrs attrs = attrs_from_kwargs(spec, kwargs);
  std::vector<Tensor> tensors;
  std::vector<TensorView> views;
  for (const auto& arg : args) {
    if (!py::isinstance<Tensor>(arg))
      throw_error(StatusCode::kInvalidArgument,
                  op + " argument " + std::to_string(views.size()) + " is a " +
                      py::str(py::type::of(arg)).cast<std::string>() + ", not a polychip.Tensor");
    tensors.push_back(arg.cast<const Tensor&>());
    views.push_back(tensors.back().view());
  }
  if (views.empty()) throw_error(StatusCode::kInvalidArgument, op + " was given no tensors");
  // A Python kernel patch (bind_kernel_patches.cpp) may run underneath: its
  // exception's message joins the HAL's error.
  with_python_callback_errors([&] {
    if (stream) {
      Runtime::global().dispatcher().call(op, views, attrs, stream->stream);
      stream->enqueue(tensors);
      return;
    }
    py::gil_scoped_release unlocked;
    Stream own(views.front().device());
    Runtime::global().dispatcher().call(op, views, attrs, own);
    own.synchronize();
  });
}

py::dict op_info(const OpSpec& spec) {
  py::list inputs, outputs, attributes;
  for (const auto& t : spec.tensors) (t.is_output ? outputs : inputs).append(t.name);
  for (const auto& a : spec.attrs)
    attributes.append(py::dict(py::arg("name") = a.name,
                               py::arg("type") = a.is_float ? "float" : "int",
                               py::arg("default") = a.default_value, py::arg("doc") = a.doc));
  return py::dict(py::arg("name") = spec.name, py::arg("family") = spec.family,
                  py::arg("summary") = spec.summary, py::arg("inputs") = inputs,
                  py::arg("outputs") = outputs, py::arg("attributes") = attributes);
}

}  // namespace

void bind_ops(py::module_& m) {
  m.def("call", &call_op, py::arg("op"),
        "Runs a contract op on its tensors' device: call(op, *inputs_then_outputs, "
        "stream=None, **attributes); with a stream it is queued, not waited for.");
  m.def(
      "ops",
      [] {
        py::list out;
        for (const auto& spec : op_contract()) out.append(op_info(spec));
        return out;
      },
      "The operator contract: name, family, summary, inputs, outputs, attributes of every op.");
}

}  // namespace polychip::python
