#include "gpt2_model.hpp"

#include <cmath>

#include "polychip/error.hpp"

namespace polychip::training {
namespace {

void check_model_dtype(DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kF64 && dtype != DType::kBF16)
    throw Error(
        StatusCode::kUnsupported,
        "training: model dtype " + std::string(dtype_name(dtype)) + " (f32, bf16 and f64 only)");
}

StageLayers checked_stage(const Gpt2Config& config, StageLayers stage) {
  if (stage.first == 0 && stage.end == 0) return {0, static_cast<int>(config.num_layers)};
  if (stage.first < 0 || stage.end <= stage.first || stage.end > config.num_layers)
    throw Error(StatusCode::kInvalidArgument,
                "training: stage blocks [" + std::to_string(stage.first) + ", " +
                    std::to_string(stage.end) + ") outside the model's " +
                    std::to_string(config.num_layers));
  return stage;
}

}  // namespace

Gpt2Model::Gpt2Model(const Gpt2Config& config, int64_t batch_size, int64_t seq_len, DType dtype,
                     HalOps& ops, StageLayers stage, int activation_slots)
    : config_(config),
      layout_(config),
      stage_(checked_stage(config, stage)),
      batch_(batch_size),
      seq_(seq_len),
      rows_(batch_size * seq_len),
      loss_positions_(rows_),
      dtype_(dtype),
      ops_(ops),
      device_(ops.stream().device()) {
  check_model_dtype(dtype);
  if (activation_slots < 1)
    throw Error(StatusCode::kInvalidArgument,
                "training: a model holds one activation slot or more");
  const int64_t C = config.channels, H = config.num_heads, hs = config.head_dim();
  const int64_t N = rows_, V = config.vocab_size;
  const Shape heads{batch_, H, seq_, hs};
  params_ = make({layout_.total()});
  grads_ = make({layout_.total()});
  // A stage never writes the gradients of the blocks it does not run.
  if (!first_stage() || !last_stage()) ops_.fill(grads_, 0.0);
  positions_ = make({N}, DType::kI32);
  std::vector<int32_t> pos(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) pos[i] = static_cast<int32_t>(i % seq_);
  positions_.copy_from_host(pos.data());
  for (int s = 0; s < activation_slots; ++s) slots_.push_back(make_activations());
  d_loss_ = make({N}, DType::kF32);
  if (last_stage()) d_logits_ = make({N, V});
  if (first_stage() && last_stage()) d_wte_embedding_ = make({V, C});
  d_ln_ = make({N, C});
  d_residual_ = make({N, C});
  d_residual_mid_ = make({N, C});
  d_tmp_ = make({N, C});
  d_fc_gelu_ = make({N, 4 * C});
  d_fc_ = make({N, 4 * C});
  d_qkv_ = make({N, 3 * C});
  d_attn_merged_ = make({N, C});
  d_attn_out_ = make(heads);
  d_q_ = make(heads);
  d_k_ = make(heads);
  d_v_ = make(heads);
}

Gpt2Model::Activations Gpt2Model::make_activations() const {
  const int64_t C = config_.channels, H = config_.num_heads, hs = config_.head_dim();
  const int64_t N = rows_, V = config_.vocab_size;
  const Shape heads{batch_, H, seq_, hs};
  Activations a;
  a.tokens = make({N}, DType::kI32);
  a.targets = make({N}, DType::kI32);
  a.residuals.resize(static_cast<size_t>(config_.num_layers + 1));
  for (int l = stage_.first; l <= stage_.end; ++l) a.residuals[l] = make({N, C});
  for (int l = stage_.first; l < stage_.end; ++l) {
    a.blocks.push_back({make({N, C}), make({N}, DType::kF32), make({N}, DType::kF32),
                        make({N, 3 * C}), make(heads), make(heads), make(heads), make(heads),
                        make({batch_, H, seq_}, DType::kF32), make({N, C}), make({N, C}),
                        make({N, C}), make({N}, DType::kF32), make({N}, DType::kF32),
                        make({N, 4 * C}), make({N, 4 * C})});
  }
  if (last_stage()) {
    a.ln_f = make({N, C});
    a.ln_f_mean = make({N}, DType::kF32);
    a.ln_f_rstd = make({N}, DType::kF32);
    a.logits = make({N, V});
    a.losses = make({N}, DType::kF32);
  }
  return a;
}

Tensor Gpt2Model::make(Shape shape, DType dtype) const {
  return Tensor(device_, dtype, std::move(shape));
}

BufferSlice Gpt2Model::param(int index) const {
  const ParamInfo& p = layout_[index];
  return {&params_.buffer(), dtype_, p.offset, p.shape};
}

BufferSlice Gpt2Model::grad(int index) const {
  const ParamInfo& p = layout_[index];
  return {&grads_.buffer(), dtype_, p.offset, p.shape};
}

void Gpt2Model::set_params(const std::vector<double>& values) {
  if (static_cast<int64_t>(values.size()) != layout_.total())
    throw Error(StatusCode::kInvalidArgument, "training: " + std::to_string(values.size()) +
                                                  " parameter values for a model of " +
                                                  std::to_string(layout_.total()));
  // Rounded to the model's dtype to nearest even, as the HAL's cast does.
  std::vector<uint8_t> bytes(params_.size_bytes());
  const size_t size = dtype_size(dtype_);
  for (size_t i = 0; i < values.size(); ++i)
    store_from_f64(values[i], bytes.data() + i * size, dtype_);
  params_.copy_from_host(bytes.data());
}

std::vector<double> Gpt2Model::params() const {
  ops_.stream().synchronize();
  return host_values(params_);
}

std::vector<double> Gpt2Model::grads() const {
  ops_.stream().synchronize();
  return host_values(grads_);
}

TensorView Gpt2Model::qkv_part(const Tensor& qkv, int part) const {
  const int64_t C = config_.channels, hs = config_.head_dim();
  return strided_view(qkv.buffer(), dtype_, {batch_, config_.num_heads, seq_, hs},
                      {seq_ * 3 * C, hs, 3 * C, 1}, part * C);
}

TensorView Gpt2Model::heads_view(const Tensor& merged) const {
  const int64_t C = config_.channels, hs = config_.head_dim();
  return strided_view(merged.buffer(), dtype_, {batch_, config_.num_heads, seq_, hs},
                      {seq_ * C, hs, C, 1});
}

double Gpt2Model::forward(const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets,
                          int slot) {
  if (static_cast<int64_t>(tokens.size()) != rows_ || static_cast<int64_t>(targets.size()) != rows_)
    throw Error(StatusCode::kInvalidArgument, "training: forward takes batch_size * seq_len = " +
                                                  std::to_string(rows_) + " tokens and targets");
  Activations& a = slots_.at(slot);
  a.tokens.copy_from_host(tokens.data());
  a.targets.copy_from_host(targets.data());
  if (first_stage()) {
    Tensor& x = a.residuals[0];
    ops_.embedding(a.tokens, param(layout_.wte()).view(), x);
    ops_.embedding(positions_, param(layout_.wpe()).view(), d_tmp_);
    ops_.add(x, d_tmp_, x);
  }
  for (int l = stage_.first; l < stage_.end; ++l)
    block_forward(a.blocks[l - stage_.first], l, a.residuals[l], a.residuals[l + 1]);
  if (!last_stage()) return 0;
  ops_.layernorm(a.residuals.back(), param(layout_.ln_f_weight()).view(),
                 param(layout_.ln_f_bias()).view(), a.ln_f, a.ln_f_mean, a.ln_f_rstd,
                 config_.layernorm_eps);
  ops_.gemm(a.ln_f, param(layout_.wte()).view(), a.logits, false, true);
  ops_.cross_entropy(a.logits, a.targets, a.losses);
  ops_.stream().synchronize();
  const std::vector<float> losses = a.losses.to_vector<float>();
  double sum = 0;
  for (float v : losses) sum += v;
  return sum / static_cast<double>(rows_);
}

void Gpt2Model::block_forward(BlockActivations& a, int layer, const Tensor& input,
                              const Tensor& output) {
  const BlockParams& p = layout_.blocks()[layer];
  const double eps = config_.layernorm_eps;
  ops_.layernorm(input, param(p.ln_1_weight).view(), param(p.ln_1_bias).view(), a.ln_1, a.ln_1_mean,
                 a.ln_1_rstd, eps);
  ops_.gemm(a.ln_1, param(p.c_attn_weight).view(), a.qkv, false, false);
  ops_.add_bias(a.qkv, param(p.c_attn_bias));
  ops_.copy(qkv_part(a.qkv, 0), a.q);
  ops_.copy(qkv_part(a.qkv, 1), a.k);
  ops_.copy(qkv_part(a.qkv, 2), a.v);
  const double scale = 1.0 / std::sqrt(static_cast<double>(config_.head_dim()));
  ops_.attention(a.q, a.k, a.v, a.attn_out, a.attn_lse, scale);
  ops_.copy(a.attn_out, heads_view(a.attn_merged));
  ops_.gemm(a.attn_merged, param(p.attn_c_proj_weight).view(), a.residual_mid, false, false);
  ops_.add_bias(a.residual_mid, param(p.attn_c_proj_bias));
  ops_.add(a.residual_mid, input, a.residual_mid);
  ops_.layernorm(a.residual_mid, param(p.ln_2_weight).view(), param(p.ln_2_bias).view(), a.ln_2,
                 a.ln_2_mean, a.ln_2_rstd, eps);
  ops_.gemm(a.ln_2, param(p.c_fc_weight).view(), a.fc, false, false);
  ops_.add_bias(a.fc, param(p.c_fc_bias));
  ops_.gelu_tanh(a.fc, a.fc_gelu);
  ops_.gemm(a.fc_gelu, param(p.mlp_c_proj_weight).view(), output, false, false);
  ops_.add_bias(output, param(p.mlp_c_proj_bias));
  ops_.add(output, a.residual_mid, output);
}

void Gpt2Model::head_backward(const Activations& a) {
  ops_.fill(d_loss_, 1.0 / static_cast<double>(loss_positions_));
  ops_.cross_entropy_backward(a.logits, a.targets, d_loss_, d_logits_);
  // Tied embedding: the output projection's gradient first, the input
  // embedding's added at the end (on the first stage).
  ops_.gemm(d_logits_, a.ln_f, grad(layout_.wte()).view(), true, false);
  ops_.gemm(d_logits_, param(layout_.wte()).view(), d_ln_, false, false);
  ops_.layernorm_backward(d_ln_, a.residuals.back(), param(layout_.ln_f_weight()).view(),
                          a.ln_f_mean, a.ln_f_rstd, d_residual_, grad(layout_.ln_f_weight()).view(),
                          grad(layout_.ln_f_bias()).view());
}

void Gpt2Model::embedding_backward(const Activations& a) {
  const TensorView d_wte = grad(layout_.wte()).view();
  if (last_stage()) {
    ops_.embedding_backward(a.tokens, d_residual_, d_wte_embedding_);
    ops_.add(d_wte, d_wte_embedding_, d_wte);
  } else {  // the last stage's rank adds the projection's when the stages' gradients are summed
    ops_.embedding_backward(a.tokens, d_residual_, d_wte);
  }
  ops_.embedding_backward(positions_, d_residual_, grad(layout_.wpe()).view());
}

void Gpt2Model::backward(int slot) {
  Activations& a = slots_.at(slot);
  if (last_stage()) head_backward(a);
  // The layout: wte, wpe, the blocks in order, ln_f (gpt2_params.cpp).
  const auto& params = layout_.params();
  const auto block_begin = [&](int l) { return params[layout_.blocks()[l].ln_1_weight].offset; };
  if (last_stage()) gradients_ready(params[layout_.ln_f_weight()].offset, layout_.total());
  for (int l = stage_.end - 1; l >= stage_.first; --l) {
    block_backward(a.blocks[l - stage_.first], l, a.residuals[l], d_residual_);
    gradients_ready(block_begin(l), l + 1 < config_.num_layers
                                        ? block_begin(l + 1)
                                        : params[layout_.ln_f_weight()].offset);
  }
  if (!first_stage()) return;
  embedding_backward(a);
  gradients_ready(0, params[layout_.wpe()].offset + params[layout_.wpe()].numel());
}

void Gpt2Model::block_backward(BlockActivations& a, int layer, const Tensor& input,
                               Tensor& d_residual) {
  const BlockParams& p = layout_.blocks()[layer];
  // MLP: output = residual_mid + c_proj(gelu(c_fc(ln_2(residual_mid)))).
  ops_.gemm(a.fc_gelu, d_residual, grad(p.mlp_c_proj_weight).view(), true, false);
  ops_.bias_grad(d_residual, grad(p.mlp_c_proj_bias));
  ops_.gemm(d_residual, param(p.mlp_c_proj_weight).view(), d_fc_gelu_, false, true);
  ops_.gelu_tanh_backward(d_fc_gelu_, a.fc, d_fc_);
  ops_.gemm(a.ln_2, d_fc_, grad(p.c_fc_weight).view(), true, false);
  ops_.bias_grad(d_fc_, grad(p.c_fc_bias));
  ops_.gemm(d_fc_, param(p.c_fc_weight).view(), d_ln_, false, true);
  ops_.layernorm_backward(d_ln_, a.residual_mid, param(p.ln_2_weight).view(), a.ln_2_mean,
                          a.ln_2_rstd, d_tmp_, grad(p.ln_2_weight).view(),
                          grad(p.ln_2_bias).view());
  ops_.add(d_residual, d_tmp_, d_residual_mid_);
  // Attention: residual_mid = input + c_proj(attention(c_attn(ln_1(input)))).
  ops_.gemm(a.attn_merged, d_residual_mid_, grad(p.attn_c_proj_weight).view(), true, false);
  ops_.bias_grad(d_residual_mid_, grad(p.attn_c_proj_bias));
  ops_.gemm(d_residual_mid_, param(p.attn_c_proj_weight).view(), d_attn_merged_, false, true);
  ops_.copy(heads_view(d_attn_merged_), d_attn_out_);
  const double scale = 1.0 / std::sqrt(static_cast<double>(config_.head_dim()));
  ops_.attention_backward(d_attn_out_, a.q, a.k, a.v, a.attn_out, a.attn_lse, d_q_, d_k_, d_v_,
                          scale);
  ops_.copy(d_q_, qkv_part(d_qkv_, 0));
  ops_.copy(d_k_, qkv_part(d_qkv_, 1));
  ops_.copy(d_v_, qkv_part(d_qkv_, 2));
  ops_.gemm(a.ln_1, d_qkv_, grad(p.c_attn_weight).view(), true, false);
  ops_.bias_grad(d_qkv_, grad(p.c_attn_bias));
  ops_.gemm(d_qkv_, param(p.c_attn_weight).view(), d_ln_, false, true);
  ops_.layernorm_backward(d_ln_, input, param(p.ln_1_weight).view(), a.ln_1_mean, a.ln_1_rstd,
                          d_tmp_, grad(p.ln_1_weight).view(), grad(p.ln_1_bias).view());
  ops_.add(d_residual_mid_, d_tmp_, d_residual);
}

}  // namespace polychip::training
