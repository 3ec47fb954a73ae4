// Runs one precision case on one device: builds the problem, asks the
// device (NotSupported when it lacks the dtype or a kernel), computes the
// oracle's and the NVIDIA emulation's results on the same inputs, measures
// every output and decides the verdict.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case_spec.hpp"
#include "metrics.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/memory.hpp"
#include "precision/host_tensor.hpp"
#include "problem.hpp"
#include "tolerance.hpp"
#include "verdict.hpp"
#include "waivers.hpp"

namespace polychip::precision {

struct References {
  HostOpFn oracle = nullptr;  // float64 oracle (required)
  HostOpFn nvidia = nullptr;  // NVIDIA emulation (optional: no ratio without it)
  std::string nvidia_label = "nvidia (emulated)";
  // Outputs recorded on NVIDIA hardware, replacing `nvidia` case by case:
  // fills `outputs` and returns their provenance ("recorded on ..."), or
  // returns "" when nothing is recorded for the case. Throws Error
  // (DATA_CORRUPTION) for a record that does not fit the case.
  std::function<std::string(const CaseSpec& spec, const OpSpec& op,
                            std::span<const HostTensor> inputs, std::span<HostTensor> outputs,
                            const polychip_op_attrs& attrs)>
      nvidia_recorded;
};

struct CaseContext {
  Device device;
  Dispatcher* dispatcher = nullptr;
  const Stream* stream = nullptr;
  References references;
  const ToleranceTable* tolerances = nullptr;
  const WaiverList* waivers = nullptr;
  // Name the user gave for the adapter / device ("cpu", "sim.bf16acc"):
  // used in the reproducer and for waiver matching.
  std::string adapter;
  // The reproducer is repro_prefix + case id.
  std::string repro_prefix;
  // Keep the device's outputs in CaseOutcome (to record a reference trace).
  bool keep_device_outputs = false;
};

struct CaseOutcome {
  Verdict verdict = Verdict::kPass;
  // The case record of results.json (schema in docs/results-schema.md).
  nlohmann::json record;
  // With CaseContext::keep_device_outputs: the device's outputs, when the
  // call ran, left its canaries intact and gave the same bits twice (empty
  // otherwise, and for exhaustive cases, which keep no outputs).
  std::vector<HostTensor> device_outputs;
};

// Never throws for adapter errors: they become verdicts.
CaseOutcome run_case(const CaseSpec& spec, const CaseContext& ctx);

// Output k of the problem against its exact values, with the problem's
// cancellation terms and error scale (metrics.hpp compare_output).
OutputMetrics compare_problem_output(const Problem& p, size_t k, const HostTensor& got,
                                     const HostTensor& exact, const Tolerance& tol);

// The record of a case that never produced one (Crash, Timeout), with the
// same fields as run_case's.
nlohmann::json make_bare_record(const CaseSpec& spec, const std::string& adapter, Verdict verdict,
                                const std::string& message, const std::string& repro);

}  // namespace polychip::precision
