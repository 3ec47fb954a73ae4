// The standard training workload's model and run configuration: a
// GPT-2-architecture decoder (sizes configurable) and the hyperparameters of
// its AdamW training run. Presets name the sizes the tests and tools use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "polychip/dtype.hpp"

namespace polychip::training {

struct Gpt2Config {
  int64_t vocab_size = 64;
  int64_t max_seq_len = 32;  // n_positions: rows of wpe
  int64_t num_layers = 2;
  int64_t num_heads = 2;
  int64_t channels = 32;  // n_embd; a multiple of num_heads
  double layernorm_eps = 1e-5;
  int64_t head_dim() const { return channels / num_heads; }
};

struct TrainConfig {
  Gpt2Config model;
  int64_t batch_size = 4;
  int64_t seq_len = 32;  // tokens per sequence, <= model.max_seq_len
  double learning_rate = 1e-3;
  double beta1 = 0.9, beta2 = 0.95, adam_eps = 1e-8;
  double weight_decay = 0.0;  // decoupled, applied to every parameter
  double grad_clip = 1.0;     // max global L2 norm of the gradients; 0 disables
  uint64_t seed = 1234;       // weights init and the generated corpus
  int64_t corpus_tokens = 1 << 16;
  // "fp32", or "bf16": forward and backward in bf16 (the contract's bf16
  // ops accumulate in f32), fp32 master weights, gradients and AdamW.
  std::string precision = "fp32";
  // The preset these fields started from (train_preset), empty for a config
  // set field by field. Not part of the workload: a checkpoint records it so
  // a resume with another preset is told which one wrote it.
  std::string preset;
};

// "tiny" (gradient checks, seconds), "default" (the standard workload),
// "gpt2-small" (GPT-2 124M's shapes);
// throws INVALID_ARGUMENT listing the presets for another name.
TrainConfig train_preset(std::string_view name);
// Throws INVALID_ARGUMENT naming the first bad field.
void validate(const TrainConfig& config);

}  // namespace polychip::training
