// polychip.Communicator: comm_interop's collectives for NumPy arrays (and
// anything with the buffer protocol) and polychip tensors, on any adapter.
// Ranks come from the launcher's environment (polychip --np, mpirun, srun,
// torchrun's variables), as the C++ tools take them. The GIL is released
// while a call waits on its peers, so other Python threads run.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

#include "bindings.hpp"
#include "polychip/comm/communicator.hpp"
#include "polychip/device.hpp"
#include "polychip/error.hpp"
#include "polychip/tensor.hpp"

namespace py = pybind11;

namespace polychip::python {
namespace {

using comm::BufferRef;
using comm::Communicator;

// A collective's view of a Python object: where its elements are, how many,
// of which dtype. `keep` holds what the pointer borrows for the call.
struct CommBuffer {
  std::unique_ptr<BufferRef> ref;
  uint64_t count = 0;
  DType dtype = DType::kF32;
  py::object keep;
  TensorView view;
};

CommBuffer comm_buffer(const py::object& obj, bool written, const char* role) {
  CommBuffer b;
  if (py::isinstance<Tensor>(obj)) {
    const Tensor& tensor = obj.cast<const Tensor&>();
    if (!tensor.view().is_contiguous())
      throw_error(StatusCode::kInvalidArgument,
                  std::string(role) + ": the collectives need a contiguous tensor");
    b.view = tensor.view();
    b.ref = std::make_unique<BufferRef>(b.view);
    b.count = static_cast<uint64_t>(tensor.numel());
    b.dtype = tensor.dtype();
    b.keep = obj;
    return b;
  }
  if (!py::isinstance<py::array>(obj))
    throw_error(StatusCode::kInvalidArgument, std::string(role) +
                                                  " is a NumPy array or a polychip.Tensor, not " +
                                                  py::repr(obj).cast<std::string>());
  auto array = obj.cast<py::array>();
  if (!(array.flags() & py::array::c_style))
    throw_error(StatusCode::kInvalidArgument,
                std::string(role) + ": the collectives need a C-contiguous array");
  if (written && !array.writeable())
    throw_error(StatusCode::kInvalidArgument, std::string(role) + " is read-only");
  // The wire and the reductions take the host's byte order.
  if (const py::dtype dt = array.dtype(); !dt.attr("isnative").cast<bool>())
    throw_error(StatusCode::kInvalidArgument,
                std::string(role) + " has dtype " + dt.attr("str").cast<std::string>() +
                    ", not in the host's byte order (convert it with .astype(" +
                    py::repr(dt.attr("newbyteorder")("=").attr("str")).cast<std::string>() + "))");
  b.dtype = dtype_of_array(array);
  b.count = static_cast<uint64_t>(array.size());
  b.ref = std::make_unique<BufferRef>(written ? array.mutable_data() : array.data());
  b.keep = obj;
  return b;
}

void expect_same_dtype(const CommBuffer& a, const CommBuffer& b) {
  if (a.dtype != b.dtype)
    throw_error(StatusCode::kInvalidArgument, "send is " + std::string(dtype_name(a.dtype)) +
                                                  " but recv is " +
                                                  std::string(dtype_name(b.dtype)));
}

void expect_count(const CommBuffer& b, uint64_t expected, const std::string& what) {
  if (b.count != expected)
    throw_error(StatusCode::kInvalidArgument, what + " holds " + std::to_string(b.count) +
                                                  " elements, expected " +
                                                  std::to_string(expected));
}

// recv=None: in place, in `send`.
CommBuffer output_or_input(const py::object& send, const py::object& recv) {
  return comm_buffer(recv.is_none() ? send : recv, true, recv.is_none() ? "send" : "recv");
}

}  // namespace

void bind_comm(py::module_& m) {
  py::class_<Communicator>(m, "Communicator",
                           "Collectives across ranks on any adapters (docs/python.md).")
      .def_static(
          "from_environment",
          [](const std::optional<Device>& device) {
            comm::CommConfig config = comm::CommConfig::from_environment();
            if (device) {  // ranks on the same device type form an island
              config.device_type = device->device_type();
              config.vendor = device->adapter_name();
            }
            py::gil_scoped_release release;
            return Communicator::from_environment(config);
          },
          py::arg("device") = py::none(),
          "Joins the job the launcher started (polychip --np, mpirun, srun, or RANK/WORLD_SIZE/"
          "MASTER_ADDR/MASTER_PORT); `device`: the polychip.Device this rank computes on.")
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("device_types",
                             [](const Communicator& c) {
                               std::vector<std::string> types;
                               for (const auto& r : c.ranks()) types.push_back(r.device_type);
                               return types;
                             })
      .def(
          "all_reduce",
          [](Communicator& c, const py::object& send, const py::object& recv,
             const std::string& op) {
            CommBuffer in = comm_buffer(send, recv.is_none(), "send");
            CommBuffer out = output_or_input(send, recv);
            expect_same_dtype(in, out);
            expect_count(out, in.count, "recv");
            const comm::ReduceOp reduce = comm::parse_reduce_op(op);
            py::gil_scoped_release release;
            c.all_reduce(*in.ref, *out.ref, in.count, in.dtype, reduce);
          },
          py::arg("send"), py::arg("recv") = py::none(), py::arg("op") = "sum",
          "recv = the reduction of every rank's send (recv=None: in place).")
      .def(
          "broadcast",
          [](Communicator& c, const py::object& buffer, int root) {
            CommBuffer b = comm_buffer(buffer, true, "buffer");
            py::gil_scoped_release release;
            c.broadcast(*b.ref, *b.ref, b.count, b.dtype, root);
          },
          py::arg("buffer"), py::arg("root") = 0, "buffer = root's buffer, on every rank.")
      .def(
          "all_gather",
          [](Communicator& c, const py::object& send, const py::object& recv) {
            CommBuffer in = comm_buffer(send, false, "send");
            CommBuffer out = comm_buffer(recv, true, "recv");
            expect_same_dtype(in, out);
            expect_count(out, in.count * static_cast<uint64_t>(c.size()), "recv");
            py::gil_scoped_release release;
            c.all_gather(*in.ref, *out.ref, in.count, in.dtype);
          },
          py::arg("send"), py::arg("recv"), "recv = every rank's send, in rank order.")
      .def(
          "reduce_scatter",
          [](Communicator& c, const py::object& send, const py::object& recv,
             const std::string& op) {
            CommBuffer in = comm_buffer(send, false, "send");
            CommBuffer out = comm_buffer(recv, true, "recv");
            expect_same_dtype(in, out);
            expect_count(in, out.count * static_cast<uint64_t>(c.size()), "send");
            const comm::ReduceOp reduce = comm::parse_reduce_op(op);
            py::gil_scoped_release release;
            c.reduce_scatter(*in.ref, *out.ref, out.count, in.dtype, reduce);
          },
          py::arg("send"), py::arg("recv"), py::arg("op") = "sum",
          "recv = this rank's block of the reduction of every rank's send.")
      .def(
          "send",
          [](Communicator& c, const py::object& buffer, int peer) {
            CommBuffer b = comm_buffer(buffer, false, "buffer");
            py::gil_scoped_release release;
            c.send(*b.ref, b.count, b.dtype, peer);
          },
          py::arg("buffer"), py::arg("peer"))
      .def(
          "recv",
          [](Communicator& c, const py::object& buffer, int peer) {
            CommBuffer b = comm_buffer(buffer, true, "buffer");
            py::gil_scoped_release release;
            c.recv(*b.ref, b.count, b.dtype, peer);
          },
          py::arg("buffer"), py::arg("peer"))
      .def("barrier",
           [](Communicator& c) {
             py::gil_scoped_release release;
             c.barrier();
           })
      .def("abort", &Communicator::abort, py::arg("reason") = "abort requested",
           "Fails the running and every later call on every rank with this reason.")
      .def_property_readonly(
          "last_transport", [](const Communicator& c) { return c.last_call().transport; },
          "What carried the last call: tcp, shm, shm+tcp (+crc32c), or local.");
}

}  // namespace polychip::python
