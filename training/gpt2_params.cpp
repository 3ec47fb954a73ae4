#include "gpt2_params.hpp"

#include <cmath>

#include "seeded_random.hpp"

namespace polychip::training {

int Gpt2ParamLayout::add(std::string name, Shape shape) {
  ParamInfo p{std::move(name), std::move(shape), total_};
  total_ += p.numel();
  params_.push_back(std::move(p));
  return static_cast<int>(params_.size()) - 1;
}

Gpt2ParamLayout::Gpt2ParamLayout(const Gpt2Config& c) {
  const int64_t C = c.channels;
  wte_ = add("wte.weight", {c.vocab_size, C});
  wpe_ = add("wpe.weight", {c.max_seq_len, C});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    BlockParams b{};
    b.ln_1_weight = add(h + "ln_1.weight", {C});
    b.ln_1_bias = add(h + "ln_1.bias", {C});
    b.c_attn_weight = add(h + "attn.c_attn.weight", {C, 3 * C});
    b.c_attn_bias = add(h + "attn.c_attn.bias", {3 * C});
    b.attn_c_proj_weight = add(h + "attn.c_proj.weight", {C, C});
    b.attn_c_proj_bias = add(h + "attn.c_proj.bias", {C});
    b.ln_2_weight = add(h + "ln_2.weight", {C});
    b.ln_2_bias = add(h + "ln_2.bias", {C});
    b.c_fc_weight = add(h + "mlp.c_fc.weight", {C, 4 * C});
    b.c_fc_bias = add(h + "mlp.c_fc.bias", {4 * C});
    b.mlp_c_proj_weight = add(h + "mlp.c_proj.weight", {4 * C, C});
    b.mlp_c_proj_bias = add(h + "mlp.c_proj.bias", {C});
    blocks_.push_back(b);
  }
  ln_f_weight_ = add("ln_f.weight", {C});
  ln_f_bias_ = add("ln_f.bias", {C});
}

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

std::vector<double> gpt2_initial_params(const Gpt2ParamLayout& layout, int64_t num_layers,
                                        uint64_t seed) {
  std::vector<double> values(static_cast<size_t>(layout.total()), 0.0);
  SeededRandom random(seed);
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(num_layers));
  for (const ParamInfo& p : layout.params()) {
    double* v = values.data() + p.offset;
    const bool is_layernorm = p.name.find("ln_") != std::string::npos;
    if (ends_with(p.name, ".bias")) continue;  // zeros
    if (is_layernorm) {
      for (int64_t i = 0; i < p.numel(); ++i) v[i] = 1.0;
      continue;
    }
    const double stddev = ends_with(p.name, "c_proj.weight") ? residual_std : 0.02;
    for (int64_t i = 0; i < p.numel(); ++i) v[i] = stddev * random.normal();
  }
  return values;
}

}  // namespace polychip::training
