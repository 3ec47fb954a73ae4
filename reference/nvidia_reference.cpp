// Dispatch from op name to the emulation's family kernels.
#include "reference/nvidia_reference.hpp"

#include <unordered_map>

#include <fmt/ranges.h>

#include "reference/emulation_ops.hpp"

namespace polychip::reference {
namespace {

using Kernel = void (*)(const emulation::Call&);

const std::unordered_map<std::string_view, Kernel>& kernels() {
  namespace e = emulation;
  static const std::unordered_map<std::string_view, Kernel> table = [] {
    std::unordered_map<std::string_view, Kernel> t = {
        {"gemm", e::gemm},
        {"reduce_sum", e::reduction},
        {"reduce_mean", e::reduction},
        {"reduce_max", e::reduction},
        {"argmax", e::reduction},
        {"l2_norm", e::reduction},
        {"softmax", e::softmax},
        {"log_softmax", e::softmax},
        {"softmax_backward", e::softmax_backward},
        {"log_softmax_backward", e::softmax_backward},
        {"layernorm", e::layernorm},
        {"layernorm_backward", e::layernorm_backward},
        {"rmsnorm", e::rmsnorm},
        {"rmsnorm_backward", e::rmsnorm_backward},
        {"cross_entropy", e::cross_entropy},
        {"cross_entropy_backward", e::cross_entropy_backward},
        {"embedding", e::embedding},
        {"embedding_backward", e::embedding_backward},
        {"rotary_embedding", e::rotary_embedding},
        {"attention", e::attention},
        {"attention_backward", e::attention_backward},
        {"adamw", e::adamw},
    };
    for (const char* name : {"add",           "sub",           "mul",
                             "div",           "neg",           "exp",
                             "log",           "sqrt",          "rsqrt",
                             "tanh",          "sigmoid",       "relu",
                             "gelu",          "silu",          "relu_backward",
                             "gelu_backward", "silu_backward", "sigmoid_backward",
                             "tanh_backward", "cast",          "fill",
                             "copy"})
      t.emplace(name, e::elementwise);
    return t;
  }();
  return table;
}

}  // namespace

bool nvidia_reference_supports(std::string_view op_name) { return kernels().count(op_name) != 0; }

void nvidia_reference_run(const OpSpec& op, std::span<const HostTensor> inputs,
                          std::span<HostTensor> outputs, const polychip_op_attrs& attrs) {
  auto it = kernels().find(op.name);
  if (it == kernels().end())
    throw_error(StatusCode::kUnsupported,
                fmt::format("the NVIDIA emulation does not implement op '{}'", op.name));
  precision::prepare_host_call(op, inputs, outputs, attrs);
  it->second(emulation::Call{{op, inputs, outputs, attrs}});
}

std::string nvidia_reference_run_or_replay(const TraceStore* store, const TraceKey& key,
                                           const OpSpec& op, std::span<const HostTensor> inputs,
                                           std::span<HostTensor> outputs,
                                           const polychip_op_attrs& attrs) {
  const TraceRecord* record = store ? store->find(key) : nullptr;
  if (!record) {
    nvidia_reference_run(op, inputs, outputs, attrs);
    return std::string(kEmulatedProvenance);
  }
  precision::prepare_host_call(op, inputs, outputs, attrs);
  if (record->outputs.size() != outputs.size())
    throw_error(StatusCode::kDataCorruption,
                fmt::format("trace record {} has {} outputs; {} has {}", key.to_string(),
                            record->outputs.size(), op.name, outputs.size()));
  for (size_t k = 0; k < outputs.size(); ++k) {
    const HostTensor& rec = record->outputs[k];
    if (rec.dtype != outputs[k].dtype || rec.shape != outputs[k].shape)
      throw_error(StatusCode::kDataCorruption,
                  fmt::format("trace record {}: output {} is recorded as {} [{}], the case "
                              "has {} [{}]",
                              key.to_string(), k, dtype_name(rec.dtype), fmt::join(rec.shape, ", "),
                              dtype_name(outputs[k].dtype), fmt::join(outputs[k].shape, ", ")));
    outputs[k].values = rec.values;
  }
  return store->provenance().to_string();
}

namespace emulation {

DType Call::compute_dtype() const {
  for (size_t k = 0; k < op.tensors.size(); ++k) {
    if (op.tensors[k].dtype_role != DTypeRole::kT) continue;
    return k < in.size() ? in[k].dtype : out[k - in.size()].dtype;
  }
  return in.empty() ? out[0].dtype : in[0].dtype;
}

}  // namespace emulation
}  // namespace polychip::reference
