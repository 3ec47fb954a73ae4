// The dispatcher's overhead per op call, against calling the same kernel
// function directly, measured in the same run. Prints the ratio.
#include <benchmark/benchmark.h>

#include "polychip/hal.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);

namespace {

// A trivial kernel: the cost measured is the call path, not the math.
polychip_status touch_kernel(const polychip_kernel_args* a) {
  benchmark::DoNotOptimize(a->tensors[0].shape[0]);
  return POLYCHIP_OK;
}

struct Fixture {
  polychip::Runtime rt{[] {
    polychip::RuntimeOptions o;
    o.builtin_adapters = {&polychip_cpu_adapter_get_api};
    return o;
  }()};
  polychip::Device cpu = rt.device("cpu");
  polychip::Tensor x{cpu, polychip::DType::kF32, {1}};
  polychip::Tensor y{cpu, polychip::DType::kF32, {1}};
  polychip::Stream stream{cpu};
  polychip_op_attrs attrs = polychip::default_attrs(*polychip::find_op("neg"));
  Fixture() { rt.dispatcher().patch("cpu.host", "neg", std::nullopt, touch_kernel, "bench"); }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_DirectCall(benchmark::State& state) {
  auto& f = fixture();
  polychip_tensor t[2] = {f.x.view().to_abi(), f.y.view().to_abi()};
  polychip_kernel_args args{};
  args.struct_size = sizeof args;
  args.tensors = t;
  args.num_tensors = 2;
  args.attrs = &f.attrs;
  auto* volatile fn = &touch_kernel;  // as the dispatcher calls it: through a pointer
  for (auto _ : state) benchmark::DoNotOptimize(fn(&args));
}
BENCHMARK(BM_DirectCall);

void BM_DispatcherCall(benchmark::State& state) {
  auto& f = fixture();
  polychip::TensorView views[2] = {f.x.view(), f.y.view()};
  for (auto _ : state) f.rt.dispatcher().call("neg", views, f.attrs, f.stream);
}
BENCHMARK(BM_DispatcherCall);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  struct Reporter : benchmark::ConsoleReporter {
    // CPU time of the calling thread: both paths are single-threaded, and on
    // a shared machine wall time mostly measures the neighbours.
    double direct = 0, dispatched = 0;
    void ReportRuns(const std::vector<Run>& runs) override {
      for (const auto& r : runs) {
        if (r.benchmark_name() == "BM_DirectCall") direct = r.GetAdjustedCPUTime();
        if (r.benchmark_name() == "BM_DispatcherCall") dispatched = r.GetAdjustedCPUTime();
      }
      ConsoleReporter::ReportRuns(runs);
    }
  } reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  if (reporter.direct > 0)
    std::printf(
        "dispatcher overhead: %.1f ns CPU per call, contract validation included (direct "
        "call %.1f ns, dispatched %.1f ns; ratio %.1fx)\n",
        reporter.dispatched - reporter.direct, reporter.direct, reporter.dispatched,
        reporter.dispatched / reporter.direct);
  return 0;
}
