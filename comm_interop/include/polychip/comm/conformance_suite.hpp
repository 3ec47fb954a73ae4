// The `comm` conformance suite: every collective x dtype x size range run
// across a mix of adapters (one rank per device spec, e.g. cpu, sim.*,
// opencl), each result checked bit for bit on every rank. Each group of
// cases runs as `polychip comm-perf --np N` child processes, so a crash or
// hang in one case is contained and reported, never fatal to the caller.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace polychip::comm {

struct CommSuiteOptions {
  std::string polychip_executable;  // the `polychip` tool; "" = /proc/self/exe
  std::vector<std::string> devices = {"cpu", "sim.faithful", "opencl"};  // rank r: devices[r]
  std::vector<std::string> dtypes = {"f32", "f16", "bf16", "f64", "i32", "i64"};
  std::vector<std::string> ops = {"sum", "prod", "min", "max", "avg"};  // all_reduce; others: sum
  // POLYCHIP_COMM_TRANSPORT of each pass: "auto" certifies the links ranks on
  // one host use (shared memory), "tcp" the ones between hosts.
  std::vector<std::string> transports = {"auto", "tcp"};
  uint64_t min_bytes = 0;
  uint64_t max_bytes = 4ull << 20;
  double step_factor = 64;      // 0, 1, 64, 4 KiB, 256 KiB, 4 MiB
  double timeout_seconds = 60;  // POLYCHIP_COMM_TIMEOUT of the children
  std::string work_dir = "/tmp";
};

struct CommCaseRecord {
  std::string collective;
  std::string dtype;
  std::string op;
  uint64_t bytes = 0;
  std::vector<std::string> device_types;  // per rank
  std::string algorithm, path;
  std::string transport;  // what ran ("shm", "tcp", ...); on "error", what was asked for
  std::string verdict;    // "pass", "fail" (#wrong > 0), "error" (the run failed)
  uint64_t wrong = 0;     // out-of-place + in-place, summed over ranks
  std::string error;
  // Wall time of the comm-perf child that ran this case, shared equally
  // among the cases that child ran (one child runs a group of cases).
  double seconds = 0;
};

std::vector<CommCaseRecord> run_comm_suite(const CommSuiteOptions& options);

}  // namespace polychip::comm
