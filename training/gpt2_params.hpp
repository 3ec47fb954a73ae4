// The parameters of the GPT-2 decoder with the Hugging Face GPT-2 names and
// layouts (Conv1D weights are [in, out]), packed into one flat array in this
// order so the optimizer and the gradient norm are one op call each.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpt2_config.hpp"
#include "polychip/tensor.hpp"

namespace polychip::training {

struct ParamInfo {
  std::string name;  // "h.0.attn.c_attn.weight"
  Shape shape;
  int64_t offset = 0;  // elements into the flat array
  int64_t numel() const { return element_count(shape); }
};

// Indices into Gpt2ParamLayout::params() of one transformer block.
struct BlockParams {
  int ln_1_weight, ln_1_bias, c_attn_weight, c_attn_bias, attn_c_proj_weight, attn_c_proj_bias,
      ln_2_weight, ln_2_bias, c_fc_weight, c_fc_bias, mlp_c_proj_weight, mlp_c_proj_bias;
};

class Gpt2ParamLayout {
 public:
  explicit Gpt2ParamLayout(const Gpt2Config& config);
  const std::vector<ParamInfo>& params() const { return params_; }
  const ParamInfo& operator[](int index) const { return params_[index]; }
  int64_t total() const { return total_; }
  int wte() const { return wte_; }
  int wpe() const { return wpe_; }
  int ln_f_weight() const { return ln_f_weight_; }
  int ln_f_bias() const { return ln_f_bias_; }
  const std::vector<BlockParams>& blocks() const { return blocks_; }

 private:
  int add(std::string name, Shape shape);
  std::vector<ParamInfo> params_;
  std::vector<BlockParams> blocks_;
  int64_t total_ = 0;
  int wte_ = 0, wpe_ = 0, ln_f_weight_ = 0, ln_f_bias_ = 0;
};

// GPT-2's initialisation, seeded: weights N(0, 0.02), the residual
// projections (c_proj) N(0, 0.02 / sqrt(2 layers)), biases 0, LayerNorm
// weights 1. Values in double; the caller rounds them to its dtype.
std::vector<double> gpt2_initial_params(const Gpt2ParamLayout& layout, int64_t num_layers,
                                        uint64_t seed);

}  // namespace polychip::training
