// The statistical tier's reference (MLPerf RCP-style): the loss curves of K
// runs of one workload on one device type that differ only in the seed of
// the initial weights (the corpus and the batches stay the trace's), and per
// step their min, max, mean and sample standard deviation. A vendor's curve
// is judged against it by compare_with_envelope (alignment.hpp).
//
// File: JSON (schema "polychip.loss_envelope/1", docs/training.md), with a
// SHA-256 content hash like a reference trace's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "polychip/runtime.hpp"

namespace polychip::training {

inline constexpr const char* kLossEnvelopeSchema = "polychip.loss_envelope/1";

struct EnvelopeMember {
  uint64_t init_seed = 0;  // seeds the initial weights only
  std::vector<double> loss;
};

struct LossEnvelope {
  std::string preset;
  nlohmann::json workload;  // train_config_json of the preset (its seed: the corpus)
  std::string precision = "fp32";
  std::string device_type, provenance, polychip_version;
  std::vector<EnvelopeMember> members;                          // K >= 2, distinct seeds
  std::vector<double> loss_min, loss_max, loss_mean, loss_std;  // per step, from step 1
  std::string content_hash;                                     // "sha256:<hex>"
  int64_t steps() const { return static_cast<int64_t>(loss_min.size()); }
};

// Trains `preset`'s workload on `device` (a device spec of `runtime`) for
// `steps` steps from weights seeded with `init_seed` instead of the
// workload's seed.
EnvelopeMember record_envelope_member(Runtime& runtime, const std::string& device,
                                      const std::string& preset, int64_t steps, uint64_t init_seed);

// The envelope of `members` (same length, distinct seeds, at least 2),
// statistics computed and hashed; INVALID_ARGUMENT otherwise.
LossEnvelope make_envelope(const std::string& preset, const std::string& device_type,
                           std::vector<EnvelopeMember> members);

nlohmann::json envelope_json(const LossEnvelope& envelope);
// Validates the schema, the content hash and that the statistics are those
// of the members: DATA_CORRUPTION naming what is wrong.
LossEnvelope parse_envelope(const nlohmann::json& json);
void write_envelope(const std::string& path, const LossEnvelope& envelope);  // atomically
LossEnvelope read_envelope(const std::string& path);  // NOT_FOUND, DATA_CORRUPTION

}  // namespace polychip::training
