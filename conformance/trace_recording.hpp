// Recording the NVIDIA reference (`certify --record-nvidia-trace FILE`):
// the worker sends each clean case's device outputs with its record, and
// the supervisor's side gathers them into a reference::TraceStore written
// atomically, its provenance taken from the device that ran them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "case_spec.hpp"
#include "precision/host_tensor.hpp"
#include "reference/trace_store.hpp"
#include "supervisor.hpp"

namespace polychip::conformance {

// The trace key of a precision case (its id is the case id).
reference::TraceKey trace_key(const precision::CaseSpec& spec);

// The "device_outputs" field of a worker's case event.
nlohmann::json device_outputs_json(const precision::CaseSpec& spec,
                                   std::vector<precision::HostTensor> outputs);

// Where and with what the run's outputs were recorded: the device's name
// and type, the NVIDIA driver's version when /proc/driver/nvidia/version
// says it, the adapter and polychip versions, the time now (UTC).
reference::TraceProvenance recording_provenance(const AdapterRun& run,
                                                const std::string& polychip_version);

// Gathers the outputs the run's workers sent into a store; throws
// Error(DATA_CORRUPTION) for a malformed one.
reference::TraceStore recorded_trace(const AdapterRun& run, const std::string& polychip_version);

}  // namespace polychip::conformance
