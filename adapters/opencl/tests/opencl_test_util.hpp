// Shared by the opencl adapter tests: a private runtime with the built-in
// adapters, PoCL's kernel cache in a temporary folder, and a runner that
// executes one op on a device through the HAL (Tensor + Dispatcher) and
// returns its outputs as doubles.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "polychip/dispatcher.hpp"
#include "polychip/dtype.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/runtime.hpp"
#include "polychip/tensor.hpp"

namespace polychip::opencl_test {

// Sets POCL_CACHE_DIR to a fresh temporary folder before any OpenCL call.
void use_temporary_pocl_cache();

struct HostTensor {
  DType dtype;
  Shape shape;
  std::vector<double> values;  // inputs only; rounded to dtype on upload
};

class OpRunner {
 public:
  explicit OpRunner(Runtime& runtime, Device device) : runtime_(runtime), device_(device) {}
  // Runs op with `inputs` then fresh outputs of the given dtypes and shapes;
  // returns every output's values.
  std::vector<std::vector<double>> run(const std::string& op, const std::vector<HostTensor>& inputs,
                                       const std::vector<HostTensor>& outputs,
                                       const polychip_op_attrs& attrs);
  const Device& device() const { return device_; }

 private:
  Runtime& runtime_;
  Device device_;
};

Tensor upload(const Device& device, const HostTensor& t);
std::vector<double> download(const Tensor& t);
std::vector<double> random_values(size_t n, unsigned seed, double lo = -2, double hi = 2);
polychip_op_attrs attrs_of(const std::string& op);

// Checks what a device produced for `op` on `inputs` against the float64
// oracle on the same (dtype-rounded) inputs, with the precision suite's own
// tolerance model (conformance/data/tolerances.json, precision/harness
// metrics): bounds grow with `reduce_len` and the output's magnitude, so
// they hold for any summation order, FMA contraction or BLAS kernel a
// correct implementation picks. Never compares two f32 implementations.
::testing::AssertionResult matches_oracle(const std::string& op,
                                          const std::vector<HostTensor>& inputs,
                                          const std::vector<HostTensor>& outputs,
                                          const std::vector<std::vector<double>>& device_outputs,
                                          const polychip_op_attrs& attrs, int64_t reduce_len);

// The runtime every test uses (built-in adapters only).
Runtime& test_runtime();
// The opencl device, or nullopt (tests then skip, saying why).
std::optional<Device> opencl_device(std::string* why);

}  // namespace polychip::opencl_test
