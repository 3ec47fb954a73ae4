#include "emulated_kernel.hpp"

#include <exception>
#include <string>
#include <vector>

#include "kernel_error.hpp"
#include "polychip/error.hpp"
#include "reference/nvidia_reference.hpp"

namespace polychip::sim {
namespace {

using precision::HostTensor;

// Calls f(element address) for every element of `v` in row-major order.
template <typename F>
void for_each_element(const cpu::TensorView& v, F&& f) {
  const int64_t n = v.numel();
  if (n == 0) return;
  const size_t size = dtype_size(v.dtype);
  int64_t index[POLYCHIP_MAX_RANK] = {};
  int64_t offset = 0;  // elements, of the current index
  for (int64_t e = 0; e < n; ++e) {
    f(v.data + offset * static_cast<int64_t>(size));
    for (int d = v.rank - 1; d >= 0; --d) {  // odometer step
      offset += v.strides[d];
      if (++index[d] < v.shape[d]) break;
      offset -= v.strides[d] * v.shape[d];
      index[d] = 0;
    }
  }
}

HostTensor host_shape(const cpu::TensorView& v) {
  HostTensor t;
  t.dtype = v.dtype;
  t.shape.assign(v.shape, v.shape + v.rank);
  return t;
}

HostTensor gather(const cpu::TensorView& v) {
  HostTensor t = host_shape(v);
  t.values.reserve(static_cast<size_t>(v.numel()));
  if (v.dtype == DType::kF32 && v.is_row_major()) {  // the common case, without a call per element
    const float* p = v.as<float>();
    t.values.assign(p, p + v.numel());
    return t;
  }
  for_each_element(v, [&](const char* p) { t.values.push_back(load_as_f64(p, v.dtype)); });
  return t;
}

void scatter(const HostTensor& t, const cpu::TensorView& v) {
  size_t k = 0;
  if (v.dtype == DType::kF32 && v.is_row_major()) {
    float* p = v.as<float>();
    for (double x : t.values) p[k++] = static_cast<float>(x);  // exact: already f32 values
    return;
  }
  for_each_element(v, [&](char* p) { store_from_f64(t.values[k++], p, v.dtype); });
}

}  // namespace

polychip_status run_host_kernel(const cpu::KernelCall& call, const HostKernel& kernel) {
  try {
    const OpSpec* op = find_op(call.op);
    if (!op)
      return cpu::kernel_error(POLYCHIP_UNSUPPORTED,
                               std::string(call.op) + ": not an op of the contract");
    const size_t num_inputs = op->num_inputs();
    if (call.tensors.size() != op->tensors.size())
      return cpu::kernel_error(POLYCHIP_INVALID_ARGUMENT,
                               std::string(call.op) + ": wrong number of tensors");
    std::vector<HostTensor> inputs, outputs;
    for (size_t k = 0; k < num_inputs; ++k) inputs.push_back(gather(call[k]));
    for (size_t k = num_inputs; k < call.tensors.size(); ++k)
      outputs.push_back(host_shape(call[k]));
    kernel(*op, inputs, outputs, *call.attrs);
    for (size_t k = 0; k < outputs.size(); ++k) scatter(outputs[k], call[num_inputs + k]);
    return POLYCHIP_OK;
  } catch (const Error& e) {
    return cpu::kernel_error(static_cast<polychip_status>(e.code()), e.what());
  } catch (const std::exception& e) {
    return cpu::kernel_error(POLYCHIP_INTERNAL, std::string(call.op) + ": " + e.what());
  }
}

polychip_status run_emulated_kernel(const cpu::KernelCall& call) {
  return run_host_kernel(call, reference::nvidia_reference_run);
}

}  // namespace polychip::sim
