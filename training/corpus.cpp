#include "corpus.hpp"

#include "seeded_random.hpp"

namespace polychip::training {

std::vector<int32_t> generate_corpus(int64_t vocab_size, int64_t num_tokens, uint64_t seed) {
  SeededRandom random(seed ^ 0xC0A9B05ull);
  const auto vocab = static_cast<uint64_t>(vocab_size);
  std::vector<int32_t> successors(static_cast<size_t>(vocab_size * kSuccessors));
  for (auto& s : successors) s = static_cast<int32_t>(random.below(vocab));
  // Successor i is chosen with weight 2^(kSuccessors - 1 - i) out of 15.
  std::vector<int32_t> tokens(static_cast<size_t>(num_tokens));
  int32_t current = static_cast<int32_t>(random.below(vocab));
  for (auto& t : tokens) {
    t = current;
    uint64_t r = random.below((1u << kSuccessors) - 1);
    int choice = 0;
    for (uint64_t weight = 1u << (kSuccessors - 1); r >= weight; weight >>= 1, ++choice)
      r -= weight;
    current = successors[static_cast<size_t>(current) * kSuccessors + choice];
  }
  return tokens;
}

uint64_t corpus_hash(const std::vector<int32_t>& tokens) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (int32_t t : tokens) {
    const auto u = static_cast<uint32_t>(t);
    for (int byte = 0; byte < 4; ++byte) {
      h ^= (u >> (8 * byte)) & 0xFFu;
      h *= 0x100000001B3ull;
    }
  }
  return h;
}

Batch batch_at(const std::vector<int32_t>& corpus, int64_t step, int64_t batch_size,
               int64_t seq_len) {
  Batch batch;
  const auto span = static_cast<int64_t>(corpus.size()) - seq_len;
  for (int64_t b = 0; b < batch_size; ++b) {
    const int64_t start = ((step * batch_size + b) * seq_len) % span;
    for (int64_t t = 0; t < seq_len; ++t) {
      batch.tokens.push_back(corpus[start + t]);
      batch.targets.push_back(corpus[start + t + 1]);
    }
  }
  return batch;
}

}  // namespace polychip::training
