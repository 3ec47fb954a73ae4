#include "host/contract_checks.hpp"

#include <cstddef>
#include <span>
#include <string>

#include <fmt/format.h>

#include "host/failure.hpp"

namespace polychip::opencl_family {

const OpSpec& require_contract_op(const char* op) {
  const OpSpec* spec = find_op(op);
  if (!spec) fail(POLYCHIP_NOT_FOUND, fmt::format("'{}' is not in the op contract", op));
  return *spec;
}

void check_contract_call(const OpSpec& spec, const polychip_kernel_args& args,
                         MemorySizeFn memory_size) {
  OpCall call{std::span<const polychip_tensor>(args.tensors, static_cast<size_t>(args.num_tensors)),
              args.attrs};
  if (std::string why = validate_call(spec, call); !why.empty())
    fail(POLYCHIP_INVALID_ARGUMENT, why);
  if (std::string why = check_tensors_bounds(call.tensors, memory_size); !why.empty())
    fail(POLYCHIP_INVALID_ARGUMENT, why);
}

}  // namespace polychip::opencl_family
