// Gradient checks: a sketch sees what a norm cannot (a gradient pointing
// the other way, two elements swapped), estimates the relative L2 distance,
// and the diagnosis names the deviating tensor with the op that computes it.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "alignment.hpp"
#include "gpt2_params.hpp"
#include "gradient_sketch.hpp"
#include "polychip/error.hpp"

namespace polychip::training {
namespace {

Gpt2Config tiny_model() {
  return {.vocab_size = 16, .max_seq_len = 8, .num_layers = 2, .num_heads = 2, .channels = 8};
}

class GradientChecks : public ::testing::Test {
 protected:
  Gpt2ParamLayout layout{tiny_model()};
  std::vector<double> grads = [this] {
    std::vector<double> g(static_cast<size_t>(layout.total()));
    for (size_t i = 0; i < g.size(); ++i) g[i] = std::sin(0.37 * static_cast<double>(i)) * 1e-2;
    return g;
  }();
  const ParamInfo& tensor(const std::string& name) const {
    for (const ParamInfo& p : layout.params())
      if (p.name == name) return p;
    throw Error(StatusCode::kNotFound, name);
  }
  TensorDeviation deviation_of(const std::vector<double>& changed, const std::string& name) {
    for (const TensorDeviation& d : gradient_deviations(gradient_check(1, grads, layout),
                                                        gradient_check(1, changed, layout), layout))
      if (d.name == name) return d;
    throw Error(StatusCode::kNotFound, name);
  }
};

TEST_F(GradientChecks, ANegatedGradientKeepsItsNormAndIsSeenByTheSketch) {
  std::vector<double> changed = grads;
  const ParamInfo& bias = tensor("h.1.mlp.c_fc.bias");
  for (int64_t i = 0; i < bias.numel(); ++i) changed[bias.offset + i] *= -1;
  const TensorDeviation d = deviation_of(changed, "h.1.mlp.c_fc.bias");
  EXPECT_EQ(d.norm_relative, 0.0);
  // |g - (-g)| / |g| = 2, estimated from 8 projections.
  EXPECT_NEAR(d.direction_relative, 2.0, 1.0);
  EXPECT_EQ(deviation_of(changed, "h.0.mlp.c_fc.bias").relative(), 0.0);
}

TEST_F(GradientChecks, TwoSwappedElementsAreSeenAndAScaledTensorIsMeasured) {
  std::vector<double> swapped = grads;
  const ParamInfo& w = tensor("h.0.attn.c_attn.weight");
  std::swap(swapped[w.offset + 3], swapped[w.offset + 40]);
  const TensorDeviation d = deviation_of(swapped, "h.0.attn.c_attn.weight");
  EXPECT_EQ(d.norm_relative, 0.0);
  EXPECT_GT(d.direction_relative, 0.0);
  std::vector<double> scaled = grads;
  for (int64_t i = 0; i < w.numel(); ++i) scaled[w.offset + i] *= 1.5;
  EXPECT_NEAR(deviation_of(scaled, "h.0.attn.c_attn.weight").norm_relative, 0.5, 1e-12);
  std::vector<double> broken = grads;
  broken[w.offset] = NAN;
  EXPECT_TRUE(std::isinf(deviation_of(broken, "h.0.attn.c_attn.weight").relative()));
}

// Random-sign noise of relative size e: the sketch's estimate is e within
// the spread of 8 projections.
TEST_F(GradientChecks, TheSketchEstimatesTheRelativeDistance) {
  const ParamInfo& w = tensor("h.0.mlp.c_proj.weight");
  double norm = 0;
  for (int64_t i = 0; i < w.numel(); ++i) norm += grads[w.offset + i] * grads[w.offset + i];
  norm = std::sqrt(norm);
  std::vector<double> noisy = grads;
  const double e = 1e-3, per_element = e * norm / std::sqrt(static_cast<double>(w.numel()));
  for (int64_t i = 0; i < w.numel(); ++i)
    noisy[w.offset + i] += (i * 7919 % 13 < 6 ? -1 : 1) * per_element;
  const double estimate = deviation_of(noisy, "h.0.mlp.c_proj.weight").direction_relative;
  EXPECT_GT(estimate, 0.3 * e);
  EXPECT_LT(estimate, 2.5 * e);
}

TEST_F(GradientChecks, TheDiagnosisNamesTheWrongBiasAndItsOp) {
  std::vector<double> changed = grads;
  const ParamInfo& bias = tensor("h.1.mlp.c_fc.bias");
  for (int64_t i = bias.numel() / 2; i < bias.numel(); ++i) changed[bias.offset + i] *= 0.5;
  const GradientDiagnosis d = diagnose_gradients(
      {gradient_check(1, grads, layout), gradient_check(2, grads, layout)},
      {gradient_check(1, changed, layout), gradient_check(2, grads, layout)}, layout, 1e-3, 1e-3);
  EXPECT_FALSE(d.pass);
  EXPECT_EQ(d.first_out, "h.1.mlp.c_fc.bias");
  EXPECT_EQ(d.culprit, "h.1.mlp.c_fc.bias");
  EXPECT_EQ(d.culprit_op, "reduce_sum (axis 0: the bias gradient)");
  ASSERT_EQ(d.later.size(), 1u);
  EXPECT_EQ(d.later[0].relative, 0.0);
  const GradientDiagnosis same = diagnose_gradients(
      {gradient_check(1, grads, layout)}, {gradient_check(1, grads, layout)}, layout, 1e-3, 1e-3);
  EXPECT_TRUE(same.pass) << same.summary;
  EXPECT_THROW(diagnose_gradients({gradient_check(2, grads, layout)},
                                  {gradient_check(1, grads, layout)}, layout, 1e-3, 1e-3),
               Error);
}

TEST_F(GradientChecks, TheirJsonReadsBackAndOtherTensorsAreRefused) {
  const std::vector<GradientCheck> checks{gradient_check(1, grads, layout)};
  const std::vector<GradientCheck> back = parse_gradient_checks(gradient_checks_json(checks));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].tensors[5].sketch, checks[0].tensors[5].sketch);
  GradientCheck renamed = checks[0];
  renamed.tensors[3].name = "other";
  EXPECT_THROW(gradient_deviations(checks[0], renamed, layout), Error);
  EXPECT_EQ(gradient_op("wpe.weight"), "embedding_backward");
  EXPECT_EQ(gradient_op("h.0.ln_1.bias"), "layernorm_backward");
  EXPECT_EQ(gradient_op("h.0.mlp.c_fc.weight"), "gemm (the weight gradient, trans_a)");
}

}  // namespace
}  // namespace polychip::training
