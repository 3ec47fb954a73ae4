// Gradient checks for the training diagnosis: at a few fixed steps, every
// parameter tensor's gradient *before clipping* as its L2 norm and a sketch
// of kSketchSize fixed random projections. Clipping by the global norm
// scales every tensor by one factor, so one wrong tensor moves the norms of
// all of them after it; before it, a tensor's norm is its own. A norm cannot
// see a gradient pointing the wrong way; the sketch can: for a tensor of n
// elements, projection k is s_k = sum_i r_k(i) g_i / sqrt(n) with fixed signs
// r_k(i) = +-1, so |s_run - s_ref| / (sqrt(K / n) |g_ref|) estimates the
// relative L2 distance |g_run - g_ref| / |g_ref| (Johnson-Lindenstrauss) from
// 8 numbers per tensor. Reference traces carry them (reference_trace.hpp);
// the diagnosis names the tensor whose gradient deviates most and the op
// that computes it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpt2_params.hpp"

namespace polychip::training {

inline constexpr int kSketchSize = 8;
// The steps whose gradients a trace records (those not past its last step).
inline constexpr int64_t kGradientCheckSteps[] = {1, 2, 5, 10};
bool is_gradient_check_step(int64_t step);

// The sign r_k(i) of projection k at a tensor's element i: the top bit of
// splitmix64(k * 2^32 + i), 0 -> +1, 1 -> -1 (docs/training.md).
double sketch_sign(int k, int64_t i);

struct TensorGradient {
  std::string name;
  double norm = 0;             // L2, summed in double in element order
  std::vector<double> sketch;  // kSketchSize projections, each summed in double in element order
};

struct GradientCheck {
  int64_t step = 0;
  std::vector<TensorGradient> tensors;  // in the model's forward order
};

// Of a flat gradient (the model's layout order, host values).
GradientCheck gradient_check(int64_t step, std::span<const double> grads,
                             const Gpt2ParamLayout& layout);

struct TensorDeviation {
  std::string name;
  double norm_relative = 0;       // |norm_run - norm_ref| / norm_ref
  double direction_relative = 0;  // the sketch's estimate of |g_run - g_ref| / |g_ref|
  // The larger of the two: how far the tensor's gradient is from the
  // reference's (infinite for a non-finite run value).
  double relative() const;
};

// Tensor by tensor; INVALID_ARGUMENT unless both name the same tensors in
// the same order with sketches of kSketchSize. A tensor whose reference
// gradient is zero deviates by 0 when the run's is zero too, else infinitely.
std::vector<TensorDeviation> gradient_deviations(const GradientCheck& reference,
                                                 const GradientCheck& run,
                                                 const Gpt2ParamLayout& layout);

// The op whose kernel writes a tensor's gradient in Gpt2Model::backward:
// "gemm" for the weight matrices (and the tied head's part of wte),
// "reduce_sum" for the biases, "layernorm_backward" for the norms' weights
// and biases, "embedding_backward" for wpe (and wte's lookup part).
std::string gradient_op(const std::string& tensor_name);

nlohmann::json gradient_checks_json(const std::vector<GradientCheck>& checks);
// nlohmann's exceptions for a malformed value.
std::vector<GradientCheck> parse_gradient_checks(const nlohmann::json& json);

}  // namespace polychip::training
