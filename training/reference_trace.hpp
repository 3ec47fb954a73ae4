// A reference trace: what one run of the standard workload looked like, step
// by step — the loss and the gradient norm of every step, the L2 norm of
// every parameter tensor's gradient at step 1 after clipping, and (traces
// recorded since they exist) gradient checks: each tensor's gradient before
// clipping, as a norm and a sketch, at steps 1, 2, 5 and 10
// (gradient_sketch.hpp), for the diagnosis —
// with what produced it (workload, seed, corpus hash, precision, device type,
// provenance, polychip version) and a SHA-256 content hash that says it is
// intact. A vendor's run is judged against one (alignment.hpp).
//
// File: JSON (schema "polychip.reference_trace/1", docs/training.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gradient_sketch.hpp"
#include "polychip/error.hpp"
#include "trainer.hpp"

namespace polychip::training {

inline constexpr const char* kReferenceTraceSchema = "polychip.reference_trace/1";

struct ReferenceTrace {
  std::string preset;       // "default", ...
  nlohmann::json workload;  // train_config_json(config)
  std::string precision = "fp32";
  std::string device_type;  // what ran it
  std::string provenance;   // "emulated" | "recorded" | "device" (trace_provenance)
  std::string polychip_version;
  std::string corpus_hash;              // hex, as `polychip train` prints it
  std::vector<double> loss, grad_norm;  // per step, from step 1
  // (parameter name, L2 norm of its gradient at step 1, after clipping), in
  // the model's forward order.
  std::vector<std::pair<std::string, double>> step1_grad_norms;
  // Empty in traces recorded before they existed (the hash then covers
  // what they hold).
  std::vector<GradientCheck> gradient_checks;
  std::string content_hash;  // "sha256:<hex>" of everything above
};

// "emulated" for an NVIDIA emulation device (sim.nvidia_emu), "recorded" for
// a real NVIDIA GPU (device types "nvidia.*"), "device" for anything else.
std::string trace_provenance(const std::string& device_type);

// (name, L2 norm) of every parameter tensor's current gradient, in forward order.
std::vector<std::pair<std::string, double>> gradient_norms(const Trainer& trainer);

// Makes `trainer` append a gradient check to `checks` at each of
// kGradientCheckSteps it runs (Trainer::set_gradient_observer); `checks`
// must outlive its steps.
void record_gradient_checks(Trainer& trainer, std::vector<GradientCheck>& checks);

// The trace of what `trainer` has run so far (its history), hashed;
// `step1_grad_norms` as gradient_norms() returned right after step 1,
// `gradient_checks` as record_gradient_checks() collected them.
ReferenceTrace make_trace(const Trainer& trainer, const std::string& preset,
                          const std::string& device_type,
                          std::vector<std::pair<std::string, double>> step1_grad_norms,
                          std::vector<GradientCheck> gradient_checks);

// Runs `trainer` (fresh) to `steps` and returns its trace; `on_step`, when
// set, is called after each step with its record.
ReferenceTrace record_trace(Trainer& trainer, const std::string& preset, int64_t steps,
                            const std::string& device_type,
                            const std::function<void(const StepRecord&)>& on_step = {});

// Shared by the content-hashed JSON files (traces, loss envelopes):
// the SHA-256 of `text` in lower-case hex; a file's JSON (NOT_FOUND,
// DATA_CORRUPTION naming `what`); DATA_CORRUPTION when `actual` (the hash of
// what was read) is not the `recorded` one.
std::string sha256_hex(const std::string& text);
nlohmann::json read_json_file(const std::string& path, const std::string& what);
void check_content_hash(const std::string& what, const std::string& recorded,
                        const std::string& actual);

// What produced a trace or an envelope (`Recorded`: either), in its JSON:
// the schema and preset, workload, precision, device_type, provenance,
// polychip_version.
template <typename Recorded>
nlohmann::json origin_json(const char* schema, const Recorded& r) {
  return {{"schema", schema},
          {"preset", r.preset},
          {"workload", r.workload},
          {"precision", r.precision},
          {"device_type", r.device_type},
          {"provenance", r.provenance},
          {"polychip_version", r.polychip_version}};
}
// Throws DATA_CORRUPTION naming `what` for another schema, nlohmann's
// exceptions for a missing or mistyped field.
template <typename Recorded>
void read_origin(const nlohmann::json& j, const char* schema, const std::string& what,
                 Recorded& r) {
  if (j.at("schema") != schema)
    throw Error(StatusCode::kDataCorruption,
                what + ": schema '" + j.at("schema").dump() + "', expected " + schema);
  r.preset = j.at("preset").template get<std::string>();
  r.workload = j.at("workload");
  r.precision = j.at("precision").template get<std::string>();
  r.device_type = j.at("device_type").template get<std::string>();
  r.provenance = j.at("provenance").template get<std::string>();
  r.polychip_version = j.at("polychip_version").template get<std::string>();
}

// DATA_CORRUPTION unless the trace's step-1 gradient norms and every
// gradient check are those of `layout`'s tensors, in its order (checks with
// sketches of kSketchSize): a trace that names other tensors cannot judge
// this model's gradients (say so before training, not after).
void check_step1_tensors(const ReferenceTrace& trace, const Gpt2ParamLayout& layout);

// "sha256:<hex>" of the trace's content (everything but content_hash).
std::string content_hash_of(const ReferenceTrace& trace);

nlohmann::json trace_json(const ReferenceTrace& trace);
// Validates the schema and the content hash: DATA_CORRUPTION naming what is wrong.
ReferenceTrace parse_trace(const nlohmann::json& json);

void write_trace(const std::string& path, const ReferenceTrace& trace);  // atomically
ReferenceTrace read_trace(const std::string& path);  // NOT_FOUND, DATA_CORRUPTION

}  // namespace polychip::training
