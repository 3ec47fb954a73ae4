// The GPT-2 decoder's forward and backward passes, written out op by op as
// llm.c does, every op a dispatcher call on the model's device:
//   x = wte[ids] + wpe[pos]
//   per block: x += attn_proj(causal_attention(c_attn(ln_1(x))))
//              x += mlp_c_proj(gelu_tanh(c_fc(ln_2(x))))
//   logits = ln_f(x) @ wte^T (tied), loss = mean cross-entropy.
// Parameters and gradients are flat arrays in Gpt2ParamLayout order.
// A pipeline stage (pipeline_schedule.hpp) runs blocks [first, end) only:
// the first stage the embeddings, the last ln_f and the loss; the others
// take their input activation from, and hand their input's gradient to, the
// caller. It holds every parameter, and its gradients of the parameters it
// does not use are zero, so the stages' gradients sum to the model's.
#pragma once

#include <functional>

#include <cstdint>
#include <vector>

#include "gpt2_config.hpp"
#include "gpt2_params.hpp"
#include "hal_ops.hpp"
#include "pipeline_schedule.hpp"

namespace polychip::training {

class Gpt2Model {
 public:
  // dtype: the compute and parameter dtype (f32 for training, f64 for the
  // gradient check).
  // stage: its blocks (default: all, the whole model); activation_slots:
  // the micro-batches whose activations it holds at once (forward and
  // backward name their slot).
  Gpt2Model(const Gpt2Config& config, int64_t batch_size, int64_t seq_len, DType dtype, HalOps& ops,
            StageLayers stage = {}, int activation_slots = 1);

  const Gpt2Config& config() const { return config_; }
  const Gpt2ParamLayout& layout() const { return layout_; }
  DType dtype() const { return dtype_; }
  int64_t batch_size() const { return batch_; }
  int64_t seq_len() const { return seq_; }

  // Host copies of the flat parameter array, in doubles (rounded to dtype
  // on the way in).
  void set_params(const std::vector<double>& values);
  std::vector<double> params() const;
  std::vector<double> grads() const;
  const Buffer& param_buffer() const { return params_.buffer(); }
  const Buffer& grad_buffer() const { return grads_.buffer(); }
  const Tensor& param_tensor() const { return params_; }
  const Tensor& grad_tensor() const { return grads_; }
  const Tensor& logits(int slot = 0) const { return slots_.at(slot).logits; }
  const StageLayers& stage() const { return stage_; }
  bool first_stage() const { return stage_.first == 0; }
  bool last_stage() const { return stage_.end == config_.num_layers; }

  // tokens and targets: batch_size * seq_len ids in [0, vocab_size).
  // Returns the mean cross-entropy loss (f32 per position, summed in double);
  // 0 on a stage before the last. A stage after the first reads its input
  // from stage_input(slot), which the caller has filled.
  double forward(const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets,
                 int slot = 0);
  // Gradients of the mean loss of slot's forward() into grads (every
  // element overwritten). A stage before the last starts from the gradient
  // the caller put in output_gradient(); a stage after the first leaves its
  // input's gradient in input_gradient().
  void backward(int slot = 0);
  // [batch_size * seq_len, channels] each: the activations that cross a
  // stage boundary and their gradients.
  const Tensor& stage_input(int slot) const { return slots_.at(slot).residuals[stage_.first]; }
  const Tensor& stage_output(int slot) const { return slots_.at(slot).residuals[stage_.end]; }
  const Tensor& output_gradient() const { return d_residual_; }
  const Tensor& input_gradient() const { return d_residual_; }
  // Called by backward() with each flat range [begin, end) of the gradients
  // as soon as its values are final, in the order backward finishes them
  // (ln_f, the blocks from last to first, then the embeddings), every
  // element once; the range's kernels are launched, not necessarily done.
  // Empty: none (the default).
  using GradientsReady = std::function<void(int64_t begin, int64_t end)>;
  void set_gradients_ready(GradientsReady ready) { gradients_ready_ = std::move(ready); }
  // The number of positions backward() divides the loss by (default: this
  // model's batch * seq). A data-parallel rank sets the global batch's, so
  // the ranks' gradients sum to the global mean's.
  void set_loss_positions(int64_t positions) { loss_positions_ = positions; }

 private:
  struct BlockActivations {
    Tensor ln_1, ln_1_mean, ln_1_rstd, qkv, q, k, v, attn_out, attn_lse, attn_merged, residual_mid,
        ln_2, ln_2_mean, ln_2_rstd, fc, fc_gelu;
  };
  // One micro-batch's: residuals[l] for the stage's l in [first, end] (the
  // others empty), blocks[l - first], and the head's on the last stage.
  struct Activations {
    Tensor tokens, targets;
    std::vector<Tensor> residuals;
    std::vector<BlockActivations> blocks;
    Tensor ln_f, ln_f_mean, ln_f_rstd, logits, losses;
  };
  Activations make_activations() const;
  BufferSlice param(int index) const;
  BufferSlice grad(int index) const;
  void gradients_ready(int64_t begin, int64_t end) const {
    if (gradients_ready_) gradients_ready_(begin, end);
  }
  GradientsReady gradients_ready_;
  Tensor make(Shape shape, DType dtype) const;
  Tensor make(Shape shape) const { return make(std::move(shape), dtype_); }
  // [B*T, 3C] rows of q|k|v (each [T, H, hs]) <-> [B, H, T, hs].
  TensorView qkv_part(const Tensor& qkv, int part) const;
  // A [B*T, C] tensor seen as [B, H, T, hs].
  TensorView heads_view(const Tensor& merged) const;
  void block_forward(BlockActivations& a, int layer, const Tensor& input, const Tensor& output);
  // d_residual: gradient w.r.t. the block's output; on return, w.r.t. its input.
  void block_backward(BlockActivations& a, int layer, const Tensor& input, Tensor& d_residual);
  // The last stage's: the loss's gradient back through the head into d_residual_.
  void head_backward(const Activations& a);
  // The first stage's: d_residual_ into the embeddings' gradients.
  void embedding_backward(const Activations& a);

  Gpt2Config config_;
  Gpt2ParamLayout layout_;
  StageLayers stage_;
  int64_t batch_, seq_, rows_;
  int64_t loss_positions_;
  DType dtype_;
  HalOps& ops_;
  Device device_;
  Tensor params_, grads_;
  Tensor positions_;
  std::vector<Activations> slots_;
  // backward scratch
  Tensor d_logits_, d_loss_, d_wte_embedding_, d_ln_, d_residual_, d_residual_mid_, d_tmp_,
      d_fc_gelu_, d_fc_, d_qkv_, d_attn_merged_, d_attn_out_, d_q_, d_k_, d_v_;
};

}  // namespace polychip::training
