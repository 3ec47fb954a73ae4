// f32 GEMM throughput on the opencl adapter (PoCL here): the tiled kernel
// against the naive kernel and against the cpu adapter, measured in the
// same run. Prints GFLOP/s per case, then the ratios.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/runtime.hpp"
#include "polychip/tensor.hpp"

namespace {

using namespace polychip;

Runtime& runtime() {
  static Runtime rt([] {
    RuntimeOptions o;
    o.builtin_adapters = builtin_adapter_entries();
    return o;
  }());
  return rt;
}

// peer: "opencl-tiled", "opencl-naive" or "cpu".
void BM_Gemm(benchmark::State& state, std::string peer) {
  const int64_t n = state.range(0);
  Runtime& rt = runtime();
  bool on_cpu = peer == "cpu";
  std::optional<Device> dev;
  try {
    dev = rt.device(on_cpu ? "cpu" : "opencl");
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  setenv("POLYCHIP_OPENCL_GEMM", peer == "opencl-naive" ? "naive" : "tiled", 1);
  std::vector<float> host(static_cast<size_t>(n * n));
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>((i * 7919) % 101) / 101;
  Tensor a = Tensor::from_host(*dev, DType::kF32, {n, n}, host.data());
  Tensor b = Tensor::from_host(*dev, DType::kF32, {n, n}, host.data());
  Tensor y(*dev, DType::kF32, {n, n});
  Stream stream(*dev);
  auto attrs = default_attrs(*find_op("gemm"));
  rt.dispatcher().call("gemm", {a, b, y, y}, attrs, stream);  // builds the program
  stream.synchronize();
  for (auto _ : state) {
    rt.dispatcher().call("gemm", {a, b, y, y}, attrs, stream);
    stream.synchronize();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2e-9 * static_cast<double>(n * n * n) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(BM_Gemm, opencl_tiled, std::string("opencl-tiled"))
    ->Arg(256)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Gemm, opencl_naive, std::string("opencl-naive"))
    ->Arg(256)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Gemm, cpu_adapter, std::string("cpu"))
    ->Arg(256)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Console output plus a record of each case's GFLOP/s for the ratios.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      auto it = r.counters.find("GFLOP/s");
      if (it != r.counters.end() && !r.error_occurred) gflops_[r.benchmark_name()] = it->second;
    }
  }
  void PrintRatios() const {
    std::printf("\nf32 GEMM on the opencl adapter, same run (higher ratio = tiled faster):\n");
    for (const char* size : {"256", "512"}) {
      auto get = [&](const char* peer) {
        auto it = gflops_.find(std::string("BM_Gemm/") + peer + "/" + size + "/real_time");
        return it == gflops_.end() ? 0.0 : it->second;
      };
      double tiled = get("opencl_tiled"), naive = get("opencl_naive"), cpu = get("cpu_adapter");
      std::printf(
          "  n=%s: tiled %.2f GFLOP/s, naive %.2f, cpu adapter %.2f; tiled/naive %.2fx, "
          "tiled/cpu %.2fx\n",
          size, tiled, naive, cpu, naive > 0 ? tiled / naive : 0.0, cpu > 0 ? tiled / cpu : 0.0);
    }
  }

 private:
  std::map<std::string, double> gflops_;
};

}  // namespace

int main(int argc, char** argv) {
  if (!std::getenv("POCL_CACHE_DIR")) {
    auto dir = std::filesystem::temp_directory_path() / "polychip-pocl-bench";
    std::filesystem::create_directories(dir);
    setenv("POCL_CACHE_DIR", dir.c_str(), 1);
  }
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
