// cpu-adapter GEMM (Dispatcher::call -> cpu kernel -> OpenBLAS) against
// OpenBLAS's cblas_sgemm called directly, same sizes, same run; prints the
// ratio per size. bf16 through the adapter (convert, sgemm, round) is
// reported against the same f32 peer to show the conversion cost.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "polychip/hal.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);

namespace {

using polychip::DType;

polychip::Runtime& runtime() {
  static polychip::Runtime rt([] {
    polychip::RuntimeOptions o;
    o.builtin_adapters = {&polychip_cpu_adapter_get_api};
    return o;
  }());
  return rt;
}

std::vector<float> random_floats(size_t n) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

void set_flops(benchmark::State& state, int64_t n) {
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_OpenBlasSgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto a = random_floats(n * n), b = random_floats(n * n);
  std::vector<float> c(n * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, n);
}

void adapter_gemm(benchmark::State& state, DType dtype) {
  const int64_t n = state.range(0);
  polychip::Device cpu = runtime().device("cpu:0");
  auto host = random_floats(n * n);
  std::vector<char> bytes(n * n * polychip::dtype_size(dtype));
  for (int64_t i = 0; i < n * n; ++i)
    polychip::store_from_f64(host[i], bytes.data() + i * polychip::dtype_size(dtype), dtype);
  auto a = polychip::Tensor::from_host(cpu, dtype, {n, n}, bytes.data());
  auto b = polychip::Tensor::from_host(cpu, dtype, {n, n}, bytes.data());
  polychip::Tensor c(cpu, dtype, {n, n}), y(cpu, dtype, {n, n});
  polychip::Stream stream(cpu);
  const auto attrs = polychip::default_attrs(*polychip::find_op("gemm"));
  auto& dispatcher = runtime().dispatcher();
  for (auto _ : state) dispatcher.call("gemm", {a, b, c, y}, attrs, stream);
  stream.synchronize();
  set_flops(state, n);
}
void BM_CpuAdapterGemmF32(benchmark::State& state) { adapter_gemm(state, DType::kF32); }
void BM_CpuAdapterGemmBF16(benchmark::State& state) { adapter_gemm(state, DType::kBF16); }

BENCHMARK(BM_OpenBlasSgemm)
    ->Arg(128)
    ->Arg(512)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CpuAdapterGemmF32)
    ->Arg(128)
    ->Arg(512)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CpuAdapterGemmBF16)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

// Console output plus the FLOP/s of each run, to print ratios at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> flops;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      auto it = r.counters.find("FLOP/s");
      if (it != r.counters.end() && r.run_type == Run::RT_Iteration)
        flops[r.benchmark_name()] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\ncpu adapter GEMM vs OpenBLAS cblas_sgemm (same run, real time):\n");
  for (const auto& [name, value] : reporter.flops) {
    const auto slash = name.find('/');
    if (name.rfind("BM_CpuAdapterGemm", 0) != 0 || slash == std::string::npos) continue;
    const std::string size = name.substr(slash + 1);
    const auto peer = reporter.flops.find("BM_OpenBlasSgemm/" + size);
    if (peer == reporter.flops.end()) continue;
    std::printf("  %-28s %7.1f GFLOP/s  OpenBLAS %7.1f GFLOP/s  ratio %.3f\n", name.c_str(),
                value / 1e9, peer->second / 1e9, value / peer->second);
  }
  benchmark::Shutdown();
  return 0;
}
