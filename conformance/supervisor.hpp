// The supervisor: runs one adapter's cases in worker child processes
// (fork + exec of the polychip binary's hidden `certify-worker` command),
// reading its JSON lines over a pipe. A worker that dies mid-case yields a
// Crash verdict for that case, one that stops answering within the timeout
// is killed and yields Timeout; either way a fresh worker resumes with the
// next case, so the run always completes.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case_spec.hpp"
#include "certify_options.hpp"
#include "verdict.hpp"

namespace polychip::conformance {

struct AdapterRun {
  std::string name;                     // as requested ("cpu", "sim.bf16acc")
  nlohmann::json info;                  // the worker's hello: version, abi, device type, patches
  std::vector<nlohmann::json> records;  // one per case, in case order
  // With CertifyOptions::record_trace_path: each case's device outputs as
  // a trace record (trace_recording.hpp), null where the case kept none.
  std::vector<nlohmann::json> device_outputs;
  int worker_starts = 0;
  double seconds = 0;                // wall time spent certifying this adapter
  std::optional<std::string> fatal;  // the adapter could not be certified at all
  bool usage_error = false;          // fatal because the request was wrong
  // Required op x dtype pairs (certification profile) the device lacks, "op dtype".
  std::vector<std::string> missing_required;
  // Pairs run for some cases and refused for others (profiles.hpp partial_support).
  nlohmann::json partial_support = nlohmann::json::array();
};

// Called after each case with its record.
using ProgressFn = std::function<void(const std::string& adapter, size_t index, size_t total,
                                      const nlohmann::json& record)>;

AdapterRun run_adapter(const std::string& adapter, const std::vector<precision::CaseSpec>& cases,
                       const CertifyOptions& options, const ProgressFn& progress);

// Path of the running executable (/proc/self/exe).
std::string self_executable();

// Kills the worker run_adapter is waiting for, if any, and its process
// group: a worker outlives a supervisor that a signal ends (it runs in a
// group of its own), and one that hangs would never end. Async-signal-safe.
void stop_running_worker();

// Makes `pid` (the leader of its own process group) the worker that
// stop_running_worker kills while this lives: a job run beside the workers,
// such as the training suite's mixed pool.
class RunningWorkerRegistration {
 public:
  explicit RunningWorkerRegistration(pid_t pid);
  ~RunningWorkerRegistration();
  RunningWorkerRegistration(const RunningWorkerRegistration&) = delete;
  RunningWorkerRegistration& operator=(const RunningWorkerRegistration&) = delete;
};

}  // namespace polychip::conformance
