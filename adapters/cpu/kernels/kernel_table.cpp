// The cpu adapter's kernel table: every (op, dtype signature) of the op
// contract, all served by one entry that turns the ABI tensors into views
// of plain host memory and runs the shared kernels with faithful numerics.
#include "cpu_adapter.hpp"
#include "kernel_error.hpp"
#include "kernel_registry.hpp"
#include "polychip/tensor_bounds.hpp"

namespace polychip::cpu {
namespace {

polychip_status cpu_kernel(const polychip_kernel_args* args) {
  if (!args || !args->tensors || args->num_tensors < 0 ||
      args->num_tensors > POLYCHIP_MAX_OP_TENSORS || !args->attrs)
    return fail(POLYCHIP_INVALID_ARGUMENT,
                "cpu kernel: args, tensors or attrs missing, or num_tensors out of range");
  const std::span tensors(args->tensors, static_cast<size_t>(args->num_tensors));
  if (auto why =
          check_tensors_bounds(tensors, [](polychip_memory* m) { return as_memory(m)->size; });
      !why.empty())
    return fail(POLYCHIP_INVALID_ARGUMENT, std::string(args->op ? args->op : "?") + ": " + why);
  TensorView views[POLYCHIP_MAX_OP_TENSORS];
  for (size_t k = 0; k < tensors.size(); ++k)
    views[k] = make_view(tensors[k], tensor_data(tensors[k]));
  static const Numerics kFaithful{};
  const KernelCall call{
      args->op, {views, static_cast<size_t>(args->num_tensors)}, args->attrs, &kFaithful};
  const polychip_status status = run_kernel(call);
  // The adapter's last_error_message() reports what the kernel said.
  return status == POLYCHIP_OK ? status : fail(status, last_kernel_error());
}

}  // namespace

std::span<const polychip_kernel_entry> kernel_entries() {
  static const std::vector<polychip_kernel_entry> entries = contract_kernel_entries(cpu_kernel);
  return entries;
}

}  // namespace polychip::cpu
