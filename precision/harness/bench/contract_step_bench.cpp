// One step over the whole op contract: every case of a level run once on the
// cpu adapter (inputs already on the device) and once on the float64 oracle,
// measured in the same run. Prints per-family and total CPU time and the
// ratio oracle / cpu adapter. Usage: contract_step_bench [quick|standard|full]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "case_list.hpp"
#include "device_io.hpp"
#include "polychip/hal.hpp"
#include "precision/oracle/oracle.hpp"
#include "problem.hpp"

namespace {

using namespace polychip;
using namespace polychip::precision;

double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

struct Prepared {
  Problem problem;
  std::vector<DeviceTensor> tensors;
  std::vector<TensorView> views;
};

}  // namespace

int main(int argc, char** argv) {
  const Level level = parse_level(argc > 1 ? argv[1] : "standard");
  Runtime& rt = Runtime::global();
  Device cpu = rt.device("cpu");
  Stream stream(cpu);
  std::vector<Prepared> cases;
  for (const auto& spec : cases_for_level(level)) {
    Prepared p{build_problem(spec, kOracle), {}, {}};
    for (const auto& in : p.problem.inputs) p.tensors.emplace_back(cpu, in, false, true);
    for (const auto& out : p.problem.outputs) p.tensors.emplace_back(cpu, out, false, false);
    for (const auto& t : p.tensors) p.views.push_back(t.view());
    cases.push_back(std::move(p));
  }
  std::map<std::string, std::pair<double, double>> by_family;  // cpu, oracle seconds
  double best_cpu = 1e30, best_oracle = 1e30;
  for (int round = 0; round < 3; ++round) {
    std::map<std::string, std::pair<double, double>> family;
    double total_cpu = 0, total_oracle = 0;
    for (auto& c : cases) {
      double t0 = thread_cpu_seconds();
      rt.dispatcher().call(c.problem.op->name, c.views, c.problem.attrs, stream);
      stream.synchronize();
      double t1 = thread_cpu_seconds();
      std::vector<HostTensor> outs = c.problem.outputs;
      oracle_run(*c.problem.op, c.problem.inputs, outs, c.problem.attrs);
      double t2 = thread_cpu_seconds();
      family[c.problem.op->family].first += t1 - t0;
      family[c.problem.op->family].second += t2 - t1;
      total_cpu += t1 - t0;
      total_oracle += t2 - t1;
    }
    if (total_cpu < best_cpu) {
      best_cpu = total_cpu;
      best_oracle = total_oracle;
      by_family = family;
    }
  }
  std::printf("contract step, level %s: %zu cases, best of 3 rounds (thread CPU time)\n",
              std::string(level_name(level)).c_str(), cases.size());
  std::printf("%-12s %12s %12s %14s\n", "family", "cpu adapter", "f64 oracle", "oracle/cpu");
  for (const auto& [name, t] : by_family)
    std::printf("%-12s %10.2f ms %10.2f ms %13.1fx\n", name.c_str(), t.first * 1e3, t.second * 1e3,
                t.second / std::max(t.first, 1e-9));
  std::printf("%-12s %10.2f ms %10.2f ms %13.1fx\n", "total", best_cpu * 1e3, best_oracle * 1e3,
              best_oracle / std::max(best_cpu, 1e-9));
  return 0;
}
