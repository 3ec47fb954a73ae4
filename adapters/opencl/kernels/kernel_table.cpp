// The opencl adapter's kernel table, built from the op contract
// (host/kernel_table.hpp): every op with a launcher, for every compute
// dtype the device can run (f64 only with cl_khr_fp64). One entry point
// serves every entry and dispatches on the op name.
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "host/contract_checks.hpp"
#include "host/kernel_table.hpp"
#include "ops.hpp"

namespace polychip::opencl {
namespace {

using Launcher = void (*)(const KernelCall&);

const std::unordered_map<std::string_view, Launcher>& launchers() {
  static const std::unordered_map<std::string_view, Launcher> map = {
      {"gemm", run_gemm},
      {"add", run_binary},
      {"sub", run_binary},
      {"mul", run_binary},
      {"div", run_binary},
      {"neg", run_unary},
      {"exp", run_unary},
      {"log", run_unary},
      {"sqrt", run_unary},
      {"rsqrt", run_unary},
      {"tanh", run_unary},
      {"sigmoid", run_unary},
      {"relu", run_unary},
      {"gelu", run_unary},
      {"silu", run_unary},
      {"relu_backward", run_unary_backward},
      {"gelu_backward", run_unary_backward},
      {"silu_backward", run_unary_backward},
      {"sigmoid_backward", run_unary_backward},
      {"tanh_backward", run_unary_backward},
      {"cast", run_cast},
      {"fill", run_fill},
      {"copy", run_copy},
      {"reduce_sum", run_reduction},
      {"reduce_mean", run_reduction},
      {"reduce_max", run_reduction},
      {"argmax", run_argmax},
      {"l2_norm", run_reduction},
      {"softmax", run_softmax},
      {"log_softmax", run_softmax},
      {"softmax_backward", run_softmax_backward},
      {"log_softmax_backward", run_softmax_backward},
      {"layernorm", run_layernorm},
      {"layernorm_backward", run_layernorm_backward},
      {"rmsnorm", run_rmsnorm},
      {"rmsnorm_backward", run_rmsnorm_backward},
      {"cross_entropy", run_cross_entropy},
      {"cross_entropy_backward", run_cross_entropy_backward},
      {"embedding", run_embedding},
      {"embedding_backward", run_embedding_backward},
      {"rotary_embedding", run_rotary},
      {"attention", run_attention},
      {"attention_backward", run_attention_backward},
      {"adamw", run_adamw},
  };
  return map;
}

bool has_launcher(std::string_view op) { return launchers().count(op) != 0; }

polychip_status run_kernel(const polychip_kernel_args* args) {
  const char* op = args && args->op ? args->op : "?";
  return errors().guarded_kernel(op, [&] {
    if (!args) fail(POLYCHIP_INVALID_ARGUMENT, "kernel args are null");
    if (!args->stream) fail(POLYCHIP_INVALID_ARGUMENT, "'stream' is null");
    if (!args->attrs) fail(POLYCHIP_INVALID_ARGUMENT, "'attrs' is null");
    if (args->num_tensors < 0 || args->num_tensors > POLYCHIP_MAX_OP_TENSORS ||
        (args->num_tensors > 0 && !args->tensors))
      fail(POLYCHIP_INVALID_ARGUMENT, fmt::format("bad tensor list ({})", args->num_tensors));
    auto it = launchers().find(op);
    if (it == launchers().end())
      fail(POLYCHIP_NOT_FOUND, fmt::format("the opencl adapter has no kernel for '{}'", op));
    // The contract's own checks, so a direct ABI caller gets the same
    // errors as the dispatcher's users instead of a wrong result.
    opencl_family::check_contract_call(opencl_family::require_contract_op(op), *args,
                                       [](polychip_memory* m) { return as_memory(m)->size; });
    Stream* stream = as_stream(args->stream);
    if (stream->device != args->device)
      fail(POLYCHIP_INVALID_ARGUMENT,
           fmt::format("stream belongs to device {}, the call names device {}", stream->device,
                       args->device));
    KernelCall call{device_at(args->device),
                    args->device,
                    stream->queue,
                    args->tensors,
                    args->num_tensors,
                    *args->attrs,
                    op};
    it->second(call);
  });
}

}  // namespace

const std::vector<polychip_kernel_entry>& kernel_entries(Device& device) {
  return opencl_family::contract_kernel_table(&device, device.has_fp64, has_launcher, run_kernel);
}

}  // namespace polychip::opencl
