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

// |a - b| <= atol + rtol |b| elementwise, NaN matching NaN and Inf matching
// Inf of the same sign; on failure the message names the first mismatch.
::testing::AssertionResult close_values(const std::vector<double>& actual,
                                        const std::vector<double>& expected, double rtol,
                                        double atol);
// Tolerances for comparing two devices' results in dtype T.
double rtol_for(DType dtype);

// The runtime every test uses (built-in adapters only).
Runtime& test_runtime();
// The opencl device, or nullopt (tests then skip, saying why).
std::optional<Device> opencl_device(std::string* why);

}  // namespace polychip::opencl_test
