// The deterministic corpus the workload trains on: a token stream from a
// first-order Markov chain whose transitions come from the seed. Each token
// has kSuccessors possible successors (weights 8:4:2:1), so a model can
// learn it: the loss falls from ln(vocab) toward the chain's entropy
// (about 1.2 nats). Batches are cut at fixed positions from the step index,
// so a resumed run sees the same batches.
#pragma once

#include <cstdint>
#include <vector>

namespace polychip::training {

inline constexpr int kSuccessors = 4;

std::vector<int32_t> generate_corpus(int64_t vocab_size, int64_t num_tokens, uint64_t seed);

// FNV-1a 64 of the tokens (little-endian int32): names the data in metadata.
uint64_t corpus_hash(const std::vector<int32_t>& tokens);

struct Batch {
  std::vector<int32_t> tokens, targets;  // batch_size * seq_len each
};

// Sequence b of step s starts at ((s * batch_size + b) * seq_len) modulo
// (corpus length - seq_len); targets are the tokens shifted by one.
Batch batch_at(const std::vector<int32_t>& corpus, int64_t step, int64_t batch_size,
               int64_t seq_len);

}  // namespace polychip::training
