// Test fixture running ops through the real HAL: a private Runtime with the
// built-in adapters, tensors filled from doubles (rounded to the dtype),
// Dispatcher::call, and read-back as doubles. Shared with adapters/sim.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "polychip/hal.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);

namespace polychip::testing {

inline RuntimeOptions kernel_test_options(std::vector<polychip_adapter_get_api_fn> extra = {}) {
  RuntimeOptions o;
  o.builtin_adapters = {&polychip_cpu_adapter_get_api};
  for (auto f : extra) o.builtin_adapters.push_back(f);
  return o;
}

// Values encoded in `dtype` (host bytes).
inline std::vector<char> encode(DType dtype, const std::vector<double>& values) {
  std::vector<char> bytes(values.size() * dtype_size(dtype));
  for (size_t i = 0; i < values.size(); ++i)
    store_from_f64(values[i], bytes.data() + i * dtype_size(dtype), dtype);
  return bytes;
}

class OpRunner {
 public:
  explicit OpRunner(Device device) : device_(device), stream_(device) {}

  const Device& device() const { return device_; }

  Tensor make(DType dtype, Shape shape, const std::vector<double>& values) const {
    EXPECT_EQ(static_cast<int64_t>(values.size()), element_count(shape)) << "test data size";
    auto bytes = encode(dtype, values);
    return Tensor::from_host(device_, dtype, std::move(shape), bytes.data());
  }
  // A tensor filled with NaN (or 0 for integers) so unwritten outputs show.
  Tensor empty(DType dtype, Shape shape) const {
    std::vector<double> v(static_cast<size_t>(element_count(shape)),
                          is_floating(dtype) ? NAN : 0.0);
    return make(dtype, std::move(shape), v);
  }
  std::vector<double> values(const Tensor& t) const {
    std::vector<char> bytes(t.size_bytes());
    t.copy_to_host(bytes.data());
    std::vector<double> out(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = load_as_f64(bytes.data() + i * dtype_size(t.dtype()), t.dtype());
    return out;
  }
  polychip_op_attrs attrs(const std::string& op) const {
    const OpSpec* spec = find_op(op);
    EXPECT_NE(spec, nullptr) << op;
    return spec ? default_attrs(*spec) : polychip_op_attrs{sizeof(polychip_op_attrs), {}, {}};
  }
  void call(const std::string& op, std::initializer_list<TensorView> tensors,
            const polychip_op_attrs& a) {
    device_.runtime().dispatcher().call(op, tensors, a, stream_);
    stream_.synchronize();
  }
  void call(const std::string& op, std::initializer_list<TensorView> tensors) {
    call(op, tensors, attrs(op));
  }

 private:
  Device device_;
  Stream stream_;
};

// Fixture on the cpu adapter.
class CpuKernelTest : public ::testing::Test {
 protected:
  Runtime rt{kernel_test_options()};
  OpRunner run{rt.device("cpu:0")};
};

inline constexpr DType kFloatDTypes[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16};

// Exact equality that treats NaN == NaN.
inline ::testing::AssertionResult same_values(const std::vector<double>& got,
                                              const std::vector<double>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
    if (!both_nan && got[i] != want[i])
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// Each element within rel * |want| + abs.
inline ::testing::AssertionResult near_values(const std::vector<double>& got,
                                              const std::vector<double>& want, double rel,
                                              double abs = 0) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    if (got[i] == want[i]) continue;
    if (!(std::fabs(got[i] - want[i]) <= rel * std::fabs(want[i]) + abs))
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want "
                                           << want[i] << " (rel " << rel << ", abs " << abs << ")";
  }
  return ::testing::AssertionSuccess();
}

// The expected values rounded to `dtype` (what a once-rounding kernel stores).
inline std::vector<double> rounded(DType dtype, std::vector<double> v) {
  for (auto& x : v) x = round_to_dtype(x, dtype);
  return v;
}

}  // namespace polychip::testing
