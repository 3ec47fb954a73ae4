// Dispatch from op name to the oracle's family kernels.
#include "precision/oracle/oracle.hpp"

#include <string>
#include <unordered_map>

#include "precision/oracle/oracle_ops.hpp"

namespace polychip::precision {
namespace {

using Kernel = void (*)(const oracle_detail::Call&);

const std::unordered_map<std::string_view, Kernel>& kernels() {
  namespace d = oracle_detail;
  static const std::unordered_map<std::string_view, Kernel> table = {
      {"gemm", d::gemm},
      {"add", d::binary},
      {"sub", d::binary},
      {"mul", d::binary},
      {"div", d::binary},
      {"neg", d::unary},
      {"exp", d::unary},
      {"log", d::unary},
      {"sqrt", d::unary},
      {"rsqrt", d::unary},
      {"tanh", d::unary},
      {"sigmoid", d::unary},
      {"relu", d::unary},
      {"gelu", d::unary},
      {"silu", d::unary},
      {"relu_backward", d::unary_backward},
      {"gelu_backward", d::unary_backward},
      {"silu_backward", d::unary_backward},
      {"sigmoid_backward", d::unary_backward},
      {"tanh_backward", d::unary_backward},
      {"cast", d::cast_fill_copy},
      {"fill", d::cast_fill_copy},
      {"copy", d::cast_fill_copy},
      {"reduce_sum", d::reduction},
      {"reduce_mean", d::reduction},
      {"reduce_max", d::reduction},
      {"argmax", d::reduction},
      {"l2_norm", d::reduction},
      {"softmax", d::softmax},
      {"log_softmax", d::softmax},
      {"softmax_backward", d::softmax_backward},
      {"log_softmax_backward", d::softmax_backward},
      {"layernorm", d::layernorm},
      {"layernorm_backward", d::layernorm_backward},
      {"rmsnorm", d::rmsnorm},
      {"rmsnorm_backward", d::rmsnorm_backward},
      {"cross_entropy", d::cross_entropy},
      {"cross_entropy_backward", d::cross_entropy_backward},
      {"embedding", d::embedding},
      {"embedding_backward", d::embedding_backward},
      {"rotary_embedding", d::rotary_embedding},
      {"attention", d::attention},
      {"attention_backward", d::attention_backward},
      {"adamw", d::adamw},
  };
  return table;
}

}  // namespace

bool oracle_supports(std::string_view op_name) { return kernels().count(op_name) != 0; }

void oracle_run(const OpSpec& op, std::span<const HostTensor> inputs, std::span<HostTensor> outputs,
                const polychip_op_attrs& attrs) {
  auto it = kernels().find(op.name);
  if (it == kernels().end())
    throw_error(StatusCode::kUnsupported,
                fmt::format("the float64 oracle does not implement op '{}'", op.name));
  prepare_host_call(op, inputs, outputs, attrs);
  it->second(oracle_detail::Call{op, inputs, outputs, attrs});
}

}  // namespace polychip::precision
