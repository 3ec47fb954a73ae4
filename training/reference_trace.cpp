#include "reference_trace.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "checkpoint.hpp"
#include "polychip/atomic_file.hpp"
#include "polychip/error.hpp"
#include "polychip/whole_file.hpp"

#ifndef POLYCHIP_VERSION
#define POLYCHIP_VERSION "unknown"
#endif

namespace polychip::training {
namespace {

[[noreturn]] void corrupt(const std::string& what) {
  throw Error(StatusCode::kDataCorruption, "reference trace: " + what);
}

// Everything but the hash, in one canonical text (keys sorted, doubles in
// shortest round-trip form).
nlohmann::json content_json(const ReferenceTrace& t) {
  nlohmann::json grads = nlohmann::json::array();
  for (const auto& [name, norm] : t.step1_grad_norms) grads.push_back({name, norm});
  nlohmann::json j = origin_json(kReferenceTraceSchema, t);
  j.update({{"corpus_hash", t.corpus_hash},
            {"loss", t.loss},
            {"grad_norm", t.grad_norm},
            {"step1_grad_norms", grads}});
  if (!t.gradient_checks.empty()) j["gradient_checks"] = gradient_checks_json(t.gradient_checks);
  return j;
}

double l2_norm(const std::vector<double>& flat, const ParamInfo& p) {
  double sum = 0;
  for (int64_t i = 0; i < p.numel(); ++i) sum += flat[p.offset + i] * flat[p.offset + i];
  return std::sqrt(sum);
}

}  // namespace

std::string sha256_hex(const std::string& text) {
  unsigned char digest[32];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw Error(StatusCode::kInternal, "OpenSSL: SHA-256 failed");
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

std::string content_hash_of(const ReferenceTrace& t) {
  return "sha256:" + sha256_hex(content_json(t).dump());
}

std::string trace_provenance(const std::string& device_type) {
  if (device_type == "sim.nvidia_emu") return "emulated";
  if (device_type.rfind("nvidia.", 0) == 0) return "recorded";
  return "device";
}

std::vector<std::pair<std::string, double>> gradient_norms(const Trainer& trainer) {
  const std::vector<double> grads = host_values(trainer.master_grads());
  std::vector<std::pair<std::string, double>> norms;
  for (const ParamInfo& p : trainer.model().layout().params())
    norms.emplace_back(p.name, l2_norm(grads, p));
  return norms;
}

void record_gradient_checks(Trainer& trainer, std::vector<GradientCheck>& checks) {
  const Gpt2ParamLayout& layout = trainer.model().layout();
  trainer.set_gradient_observer([&checks, &layout](int64_t step, const Tensor& grads) {
    if (is_gradient_check_step(step))
      checks.push_back(gradient_check(step, host_values(grads), layout));
  });
}

ReferenceTrace make_trace(const Trainer& trainer, const std::string& preset,
                          const std::string& device_type,
                          std::vector<std::pair<std::string, double>> step1_grad_norms,
                          std::vector<GradientCheck> gradient_checks) {
  ReferenceTrace t;
  t.preset = preset;
  t.workload = train_config_json(trainer.config());
  t.precision = trainer.config().precision;
  t.device_type = device_type;
  t.provenance = trace_provenance(device_type);
  t.polychip_version = POLYCHIP_VERSION;
  t.corpus_hash = fmt::format("{:016x}", trainer.corpus_hash());
  for (const StepRecord& r : trainer.history()) {
    t.loss.push_back(r.loss);
    t.grad_norm.push_back(r.grad_norm);
  }
  t.step1_grad_norms = std::move(step1_grad_norms);
  t.gradient_checks = std::move(gradient_checks);
  t.content_hash = content_hash_of(t);
  return t;
}

ReferenceTrace record_trace(Trainer& trainer, const std::string& preset, int64_t steps,
                            const std::string& device_type,
                            const std::function<void(const StepRecord&)>& on_step) {
  if (trainer.steps_done() != 0)
    throw Error(StatusCode::kInvalidArgument, "record_trace: the trainer has already run");
  std::vector<std::pair<std::string, double>> step1;
  std::vector<GradientCheck> checks;
  record_gradient_checks(trainer, checks);
  for (int64_t s = 0; s < steps; ++s) {
    const StepRecord record = trainer.step();
    if (s == 0) step1 = gradient_norms(trainer);
    if (on_step) on_step(record);
  }
  trainer.set_gradient_observer(nullptr);
  return make_trace(trainer, preset, device_type, std::move(step1), std::move(checks));
}

nlohmann::json trace_json(const ReferenceTrace& trace) {
  nlohmann::json j = content_json(trace);
  j["content_hash"] = trace.content_hash;
  return j;
}

ReferenceTrace parse_trace(const nlohmann::json& j) {
  ReferenceTrace t;
  try {
    read_origin(j, kReferenceTraceSchema, "reference trace", t);
    t.corpus_hash = j.at("corpus_hash").get<std::string>();
    t.loss = j.at("loss").get<std::vector<double>>();
    t.grad_norm = j.at("grad_norm").get<std::vector<double>>();
    for (const auto& g : j.at("step1_grad_norms"))
      t.step1_grad_norms.emplace_back(g.at(0).get<std::string>(), g.at(1).get<double>());
    if (j.contains("gradient_checks"))
      t.gradient_checks = parse_gradient_checks(j.at("gradient_checks"));
    t.content_hash = j.at("content_hash").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    corrupt(std::string("malformed: ") + e.what());
  }
  if (t.loss.empty() || t.loss.size() != t.grad_norm.size())
    corrupt(fmt::format("{} losses and {} gradient norms", t.loss.size(), t.grad_norm.size()));
  check_content_hash("reference trace", t.content_hash, content_hash_of(t));
  return t;
}

void check_step1_tensors(const ReferenceTrace& trace, const Gpt2ParamLayout& layout) {
  const std::vector<ParamInfo>& params = layout.params();
  const auto& norms = trace.step1_grad_norms;
  for (size_t i = 0; i < std::max(params.size(), norms.size()); ++i) {
    const std::string in_trace = i < norms.size() ? "'" + norms[i].first + "'" : "nothing";
    const std::string in_model = i < params.size() ? "'" + params[i].name + "'" : "nothing";
    if (in_trace != in_model)
      corrupt(fmt::format(
          "its step-1 gradient norms name {} tensors, the '{}' workload's model has {}: tensor "
          "{} is {} in the trace, {} in the model",
          norms.size(), trace.preset, params.size(), i, in_trace, in_model));
  }
  for (const GradientCheck& check : trace.gradient_checks) {
    for (size_t i = 0; i < std::max(params.size(), check.tensors.size()); ++i) {
      const std::string in_trace =
          i < check.tensors.size() ? "'" + check.tensors[i].name + "'" : "nothing";
      const std::string in_model = i < params.size() ? "'" + params[i].name + "'" : "nothing";
      if (in_trace != in_model ||
          (i < check.tensors.size() && check.tensors[i].sketch.size() != kSketchSize))
        corrupt(fmt::format(
            "its gradient check of step {} names {} as tensor {} (with {} sketch values), the "
            "'{}' workload's model {} (with {})",
            check.step, in_trace, i, i < check.tensors.size() ? check.tensors[i].sketch.size() : 0,
            trace.preset, in_model, kSketchSize));
    }
  }
}

void write_trace(const std::string& path, const ReferenceTrace& trace) {
  write_file_atomically(path, trace_json(trace).dump(1) + "\n");
}

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  const std::string text = read_whole_file(path, what);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(StatusCode::kDataCorruption, what + ": " + path + " is not JSON: " + e.what());
  }
}

void check_content_hash(const std::string& what, const std::string& recorded,
                        const std::string& actual) {
  if (actual != recorded)
    throw Error(StatusCode::kDataCorruption, what + ": content hash " + recorded +
                                                 " does not match its content (" + actual +
                                                 "): the file was changed after it was recorded");
}

ReferenceTrace read_trace(const std::string& path) {
  return parse_trace(read_json_file(path, "reference trace"));
}

}  // namespace polychip::training
