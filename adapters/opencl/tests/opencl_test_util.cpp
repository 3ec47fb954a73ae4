#include "opencl_test_util.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "metrics.hpp"
#include "precision/oracle/oracle.hpp"
#include "tolerance.hpp"

namespace polychip::opencl_test {

void use_temporary_pocl_cache() {
  static const bool done = [] {
    if (std::getenv("POCL_CACHE_DIR")) return true;  // ctest points it into the build tree
    std::string tmpl = (std::filesystem::temp_directory_path() / "polychip-pocl-XXXXXX").string();
    if (char* dir = mkdtemp(tmpl.data())) setenv("POCL_CACHE_DIR", dir, 1);
    return true;
  }();
  (void)done;
}

Runtime& test_runtime() {
  use_temporary_pocl_cache();
  static Runtime runtime([] {
    RuntimeOptions o;
    o.builtin_adapters = builtin_adapter_entries();
    return o;
  }());
  return runtime;
}

std::optional<Device> opencl_device(std::string* why) {
  Runtime& rt = test_runtime();
  for (const auto& info : rt.adapters())
    if (info.name == "opencl" && info.device_count == 0) {
      *why = "the opencl adapter has no device here: " + info.unavailable_reason;
      return std::nullopt;
    }
  return rt.device("opencl:0");
}

Tensor upload(const Device& device, const HostTensor& t) {
  size_t es = dtype_size(t.dtype);
  std::vector<unsigned char> bytes(t.values.size() * es);
  for (size_t i = 0; i < t.values.size(); ++i) store_from_f64(t.values[i], &bytes[i * es], t.dtype);
  return Tensor::from_host(device, t.dtype, t.shape, bytes.data());
}

std::vector<double> download(const Tensor& t) {
  size_t es = dtype_size(t.dtype());
  std::vector<unsigned char> bytes(static_cast<size_t>(t.numel()) * es);
  if (!bytes.empty()) t.copy_to_host(bytes.data());
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = load_as_f64(&bytes[i * es], t.dtype());
  return out;
}

std::vector<std::vector<double>> OpRunner::run(const std::string& op,
                                               const std::vector<HostTensor>& inputs,
                                               const std::vector<HostTensor>& outputs,
                                               const polychip_op_attrs& attrs) {
  std::vector<Tensor> tensors;
  for (const auto& in : inputs) tensors.push_back(upload(device_, in));
  for (const auto& out : outputs) tensors.emplace_back(device_, out.dtype, out.shape);
  std::vector<TensorView> views(tensors.begin(), tensors.end());
  Stream stream(device_);
  runtime_.dispatcher().call(op, views, attrs, stream);
  stream.synchronize();
  std::vector<std::vector<double>> result;
  for (size_t k = inputs.size(); k < tensors.size(); ++k) result.push_back(download(tensors[k]));
  return result;
}

std::vector<double> random_values(size_t n, unsigned seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

polychip_op_attrs attrs_of(const std::string& op) {
  const OpSpec* spec = find_op(op);
  if (!spec) throw std::runtime_error("unknown op " + op);
  return default_attrs(*spec);
}

::testing::AssertionResult matches_oracle(const std::string& op,
                                          const std::vector<HostTensor>& inputs,
                                          const std::vector<HostTensor>& outputs,
                                          const std::vector<std::vector<double>>& device_outputs,
                                          const polychip_op_attrs& attrs, int64_t reduce_len) {
  const OpSpec* spec = find_op(op);
  if (!spec) return ::testing::AssertionFailure() << "unknown op " << op;
  std::vector<precision::HostTensor> exact_in, exact_out, got;
  for (const auto& t : inputs) {
    precision::HostTensor h{t.dtype, t.shape, t.values};
    for (double& v : h.values) v = round_to_dtype(v, t.dtype);  // what upload() sent
    exact_in.push_back(std::move(h));
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    exact_out.push_back({outputs[k].dtype, outputs[k].shape, {}});
    got.push_back({outputs[k].dtype, outputs[k].shape, device_outputs.at(k)});
  }
  precision::oracle_run(*spec, exact_in, exact_out, attrs);
  const auto& table = precision::ToleranceTable::builtin();
  for (size_t k = 0; k < outputs.size(); ++k) {
    precision::Tolerance tol = table.lookup(op, outputs[k].dtype);
    precision::OutputMetrics m = precision::compare_output(got[k], exact_out[k], tol, reduce_len);
    if (m.within_tolerance()) continue;
    return ::testing::AssertionFailure() << fmt::format(
               "output {}: {} of {} elements beyond tolerance ({}); worst element {}: got {:.17g}, "
               "exact {:.17g} ({:.3g}x the tolerance)",
               k, m.mismatches, m.elements, tol.source, m.worst_index, m.worst_device,
               m.worst_exact, m.max_tolerance_fraction);
  }
  return ::testing::AssertionSuccess();
}

}  // namespace polychip::opencl_test
