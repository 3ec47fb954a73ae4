#include "loss_envelope.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "checkpoint.hpp"
#include "gpt2_params.hpp"
#include "hal_ops.hpp"
#include "polychip/atomic_file.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "reference_trace.hpp"
#include "trainer.hpp"

#ifndef POLYCHIP_VERSION
#define POLYCHIP_VERSION "unknown"
#endif

namespace polychip::training {
namespace {

[[noreturn]] void corrupt(const std::string& what) {
  throw Error(StatusCode::kDataCorruption, "loss envelope: " + what);
}

// Per step min, max, mean and sample standard deviation over the members.
void compute_statistics(LossEnvelope& e) {
  const size_t steps = e.members.front().loss.size();
  const double k = static_cast<double>(e.members.size());
  e.loss_min.assign(steps, INFINITY);
  e.loss_max.assign(steps, -INFINITY);
  e.loss_mean.assign(steps, 0);
  e.loss_std.assign(steps, 0);
  for (size_t i = 0; i < steps; ++i) {
    for (const EnvelopeMember& m : e.members) {
      e.loss_min[i] = std::min(e.loss_min[i], m.loss[i]);
      e.loss_max[i] = std::max(e.loss_max[i], m.loss[i]);
      e.loss_mean[i] += m.loss[i] / k;
    }
    double squares = 0;
    for (const EnvelopeMember& m : e.members)
      squares += (m.loss[i] - e.loss_mean[i]) * (m.loss[i] - e.loss_mean[i]);
    e.loss_std[i] = std::sqrt(squares / (k - 1));
  }
}

// Everything but the hash, canonical (keys sorted, shortest round-trip doubles).
nlohmann::json content_json(const LossEnvelope& e) {
  nlohmann::json members = nlohmann::json::array();
  for (const EnvelopeMember& m : e.members)
    members.push_back({{"init_seed", m.init_seed}, {"loss", m.loss}});
  nlohmann::json j = origin_json(kLossEnvelopeSchema, e);
  j.update({{"members", members},
            {"loss_min", e.loss_min},
            {"loss_max", e.loss_max},
            {"loss_mean", e.loss_mean},
            {"loss_std", e.loss_std}});
  return j;
}

std::string content_hash_of(const LossEnvelope& e) {
  return "sha256:" + sha256_hex(content_json(e).dump());
}

// Calls `fail` (which throws) with the reason when the members cannot make one envelope.
template <typename Fail>
void check_members(const std::vector<EnvelopeMember>& members, Fail fail) {
  if (members.size() < 2)
    fail(fmt::format("{} member(s); an envelope needs at least 2", members.size()));
  std::set<uint64_t> seeds;
  for (const EnvelopeMember& m : members) {
    if (m.loss.empty() || m.loss.size() != members.front().loss.size())
      fail(fmt::format("member with seed {} has {} steps, the first has {}", m.init_seed,
                       m.loss.size(), members.front().loss.size()));
    if (!seeds.insert(m.init_seed).second) fail(fmt::format("seed {} appears twice", m.init_seed));
    // A diverged run's NaN would be written as null: a file no one can read.
    for (size_t i = 0; i < m.loss.size(); ++i)
      if (!std::isfinite(m.loss[i]))
        fail(fmt::format("member with seed {} has loss {} at step {}", m.init_seed, m.loss[i],
                         i + 1));
  }
}

}  // namespace

EnvelopeMember record_envelope_member(Runtime& runtime, const std::string& device_spec,
                                      const std::string& preset, int64_t steps,
                                      uint64_t init_seed) {
  if (steps < 1) throw Error(StatusCode::kInvalidArgument, "envelope member: steps must be >= 1");
  const TrainConfig config = train_preset(preset);
  Device device = runtime.device(device_spec);
  Stream stream(device);
  HalOps ops(runtime.dispatcher(), stream);
  Trainer trainer(config, ops);
  // Fresh AdamW moments and no history: replacing the weights before step 1
  // is a run initialised from `init_seed`, on the workload's corpus.
  TrainerState state = trainer.state();
  state.params = gpt2_initial_params(trainer.model().layout(), config.model.num_layers, init_seed);
  trainer.restore(state);
  EnvelopeMember member{init_seed, {}};
  while (trainer.steps_done() < steps) member.loss.push_back(trainer.step().loss);
  return member;
}

LossEnvelope make_envelope(const std::string& preset, const std::string& device_type,
                           std::vector<EnvelopeMember> members) {
  check_members(members, [](const std::string& m) -> void {
    throw Error(StatusCode::kInvalidArgument, "loss envelope: " + m);
  });
  LossEnvelope e;
  e.preset = preset;
  e.workload = train_config_json(train_preset(preset));
  e.device_type = device_type;
  e.provenance = trace_provenance(device_type);
  e.polychip_version = POLYCHIP_VERSION;
  e.members = std::move(members);
  compute_statistics(e);
  e.content_hash = content_hash_of(e);
  return e;
}

nlohmann::json envelope_json(const LossEnvelope& envelope) {
  nlohmann::json j = content_json(envelope);
  j["content_hash"] = envelope.content_hash;
  return j;
}

LossEnvelope parse_envelope(const nlohmann::json& j) {
  LossEnvelope e;
  try {
    read_origin(j, kLossEnvelopeSchema, "loss envelope", e);
    for (const auto& m : j.at("members"))
      e.members.push_back(
          {m.at("init_seed").get<uint64_t>(), m.at("loss").get<std::vector<double>>()});
    e.loss_min = j.at("loss_min").get<std::vector<double>>();
    e.loss_max = j.at("loss_max").get<std::vector<double>>();
    e.loss_mean = j.at("loss_mean").get<std::vector<double>>();
    e.loss_std = j.at("loss_std").get<std::vector<double>>();
    e.content_hash = j.at("content_hash").get<std::string>();
  } catch (const nlohmann::json::exception& ex) {
    corrupt(std::string("malformed: ") + ex.what());
  }
  check_members(e.members, [](const std::string& m) -> void { corrupt(m); });
  check_content_hash("loss envelope", e.content_hash, content_hash_of(e));
  LossEnvelope recomputed = e;
  compute_statistics(recomputed);
  if (recomputed.loss_min != e.loss_min || recomputed.loss_max != e.loss_max ||
      recomputed.loss_mean != e.loss_mean || recomputed.loss_std != e.loss_std)
    corrupt("the per-step statistics are not those of its members");
  return e;
}

void write_envelope(const std::string& path, const LossEnvelope& envelope) {
  write_file_atomically(path, envelope_json(envelope).dump(1) + "\n");
}

LossEnvelope read_envelope(const std::string& path) {
  return parse_envelope(read_json_file(path, "loss envelope"));
}

}  // namespace polychip::training
