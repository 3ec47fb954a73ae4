#include "gpt2_config.hpp"

#include <cmath>
#include <string>

#include "polychip/error.hpp"

namespace polychip::training {

TrainConfig train_preset(std::string_view name) {
  TrainConfig c;
  c.preset = name;
  if (name == "tiny") {
    c.model = {.vocab_size = 16, .max_seq_len = 8, .num_layers = 2, .num_heads = 2, .channels = 8};
    c.batch_size = 2;
    c.seq_len = 8;
    c.corpus_tokens = 4096;
    return c;
  }
  if (name == "default") {
    c.model = {
        .vocab_size = 256, .max_seq_len = 64, .num_layers = 4, .num_heads = 4, .channels = 128};
    c.batch_size = 8;
    c.seq_len = 64;
    return c;
  }
  // Heterogeneous pools (split_planner.hpp): a global batch of 128 rows, so
  // one-row micro-batches split in ratios such as 70:58, 3:1 or 10:1; a
  // small model, so a step of 128 passes stays short.
  if (name == "pool") {
    c.model = {
        .vocab_size = 64, .max_seq_len = 16, .num_layers = 2, .num_heads = 2, .channels = 32};
    c.batch_size = 128;
    c.seq_len = 16;
    return c;
  }
  if (name == "gpt2-small") {  // GPT-2 124M's shapes, for machines that can
    c.model = {.vocab_size = 50257,
               .max_seq_len = 1024,
               .num_layers = 12,
               .num_heads = 12,
               .channels = 768};
    c.batch_size = 4;
    c.seq_len = 1024;
    c.learning_rate = 6e-4;
    c.corpus_tokens = 1 << 22;
    return c;
  }
  throw Error(StatusCode::kInvalidArgument, "unknown training preset '" + std::string(name) +
                                                "' (presets: tiny, default, pool, gpt2-small)");
}

void validate(const TrainConfig& c) {
  const auto fail = [](const std::string& what) {
    throw Error(StatusCode::kInvalidArgument, "training config: " + what);
  };
  const Gpt2Config& m = c.model;
  if (m.vocab_size < 2) fail("vocab_size must be >= 2");
  if (m.num_layers < 1) fail("num_layers must be >= 1");
  if (m.num_heads < 1 || m.channels < 1 || m.channels % m.num_heads != 0)
    fail("channels must be a positive multiple of num_heads");
  if (c.batch_size < 1) fail("batch_size must be >= 1");
  if (c.seq_len < 1 || c.seq_len > m.max_seq_len) fail("seq_len must be in [1, max_seq_len]");
  if (c.corpus_tokens < c.seq_len + 1) fail("corpus_tokens must exceed seq_len");
  for (const double v : {c.learning_rate, c.grad_clip, c.weight_decay})
    if (!(std::isfinite(v) && v >= 0))
      fail("learning_rate, grad_clip and weight_decay must be finite and >= 0");
  if (c.precision != "fp32" && c.precision != "bf16")
    fail("precision must be fp32 or bf16, got '" + c.precision + "'");
}

}  // namespace polychip::training
