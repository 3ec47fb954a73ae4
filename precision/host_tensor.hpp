// HostTensor: what the oracle, the NVIDIA emulation and the harness exchange.
// Values are stored as doubles, row-major, already rounded to `dtype` (so an
// f16 input holds exactly the f16 value the device saw).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "polychip/adapter_abi.h"
#include "polychip/dtype.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/tensor.hpp"

namespace polychip::precision {

struct HostTensor {
  DType dtype = DType::kF32;
  Shape shape;
  std::vector<double> values;  // element_count(shape) values
};

// Computes `op` on host tensors: `inputs` in contract order; `outputs` come
// with dtype and shape set and are filled in. Implemented by the float64
// oracle (precision/oracle) and by the NVIDIA emulation (reference/).
using HostOpFn = void (*)(const OpSpec& op, std::span<const HostTensor> inputs,
                          std::span<HostTensor> outputs, const polychip_op_attrs& attrs);

// Number of elements of a shape (1 for rank 0). Header-only so the host
// implementations need no link dependency.
inline int64_t host_element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Checks a host call against the op contract (tensor counts, dtypes, ranks,
// shapes, attributes: the same rules the dispatcher applies) and that every
// input holds element_count(shape) values; then sizes each output's values
// (filled with NaN, so an element an implementation forgets shows up).
// Throws Error(INVALID_ARGUMENT) naming the op and the argument.
inline void prepare_host_call(const OpSpec& op, std::span<const HostTensor> inputs,
                              std::span<HostTensor> outputs, const polychip_op_attrs& attrs) {
  const size_t num_inputs = op.num_inputs(), num_outputs = op.num_outputs();
  if (inputs.size() != num_inputs || outputs.size() != num_outputs)
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("{}: expects {} inputs and {} outputs, got {} and {}", op.name,
                            num_inputs, num_outputs, inputs.size(), outputs.size()));
  std::vector<polychip_tensor> views(op.tensors.size());
  for (size_t k = 0; k < op.tensors.size(); ++k) {
    const HostTensor& t = k < num_inputs ? inputs[k] : outputs[k - num_inputs];
    const char* name = op.tensors[k].name;
    if (t.shape.size() > POLYCHIP_MAX_RANK)
      throw_error(StatusCode::kInvalidArgument,
                  fmt::format("{}: '{}' has rank {}; at most {}", op.name, name, t.shape.size(),
                              POLYCHIP_MAX_RANK));
    if (k < num_inputs && static_cast<int64_t>(t.values.size()) != host_element_count(t.shape))
      throw_error(StatusCode::kInvalidArgument,
                  fmt::format("{}: '{}' holds {} values but its shape has {} elements", op.name,
                              name, t.values.size(), host_element_count(t.shape)));
    polychip_tensor& v = views[k];
    v = polychip_tensor{};
    v.struct_size = sizeof v;
    v.dtype = static_cast<polychip_dtype>(t.dtype);
    v.rank = static_cast<int32_t>(t.shape.size());
    int64_t stride = 1;
    for (int d = v.rank - 1; d >= 0; --d) {
      v.shape[d] = t.shape[d];
      v.strides[d] = stride;
      stride *= t.shape[d];
    }
    // Each host tensor is its own "memory": distinct, so nothing aliases.
    v.memory = reinterpret_cast<polychip_memory*>(const_cast<HostTensor*>(&t));
  }
  OpCall call{views, &attrs};
  if (std::string e = validate_call(op, call); !e.empty())
    throw_error(StatusCode::kInvalidArgument, fmt::format("{}: {}", op.name, e));
  for (auto& out : outputs)
    out.values.assign(static_cast<size_t>(host_element_count(out.shape)),
                      std::numeric_limits<double>::quiet_NaN());
}

// The integer an index tensor's element holds (ids, targets); throws
// Error(INVALID_ARGUMENT) naming the tensor when it is not an integer in
// [0, limit).
inline int64_t host_index(const OpSpec& op, const char* tensor, double value, int64_t position,
                          int64_t limit) {
  if (!(value >= 0 && value < static_cast<double>(limit)) || value != std::floor(value))
    throw_error(StatusCode::kInvalidArgument, fmt::format("{}: '{}'[{}] = {} is outside [0, {})",
                                                          op.name, tensor, position, value, limit));
  return static_cast<int64_t>(value);
}

}  // namespace polychip::precision
