// Helpers for the oracle's tests: build host tensors, run one op.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "polychip/op_contract.hpp"
#include "precision/oracle/oracle.hpp"

namespace polychip::precision::testing {

inline HostTensor tensor(Shape shape, std::vector<double> values, DType dtype = DType::kF64) {
  return HostTensor{dtype, std::move(shape), std::move(values)};
}
inline HostTensor output(Shape shape, DType dtype = DType::kF64) {
  return HostTensor{dtype, std::move(shape), {}};
}

// Runs `op` through the oracle; `attrs` starts from the contract defaults.
inline std::vector<HostTensor> run(const std::string& op_name, std::vector<HostTensor> inputs,
                                   std::vector<HostTensor> outputs,
                                   const polychip_op_attrs* attrs = nullptr) {
  const OpSpec* op = find_op(op_name);
  if (!op) throw std::runtime_error("no op " + op_name);
  polychip_op_attrs a = attrs ? *attrs : default_attrs(*op);
  oracle_run(*op, inputs, outputs, a);
  return outputs;
}

inline polychip_op_attrs attrs_of(const std::string& op_name) {
  return default_attrs(*find_op(op_name));
}

}  // namespace polychip::precision::testing
