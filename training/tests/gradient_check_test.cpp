// The whole model's backward pass against central finite differences in
// float64 on the cpu adapter: every parameter's gradient. The loss is
// recomputed on the host from the model's f64 logits (the contract's
// cross_entropy returns f32 losses, too coarse for a finite difference).
#include <gtest/gtest.h>

#include <cmath>

#include "corpus.hpp"
#include "gpt2_model.hpp"
#include "runtime_fixture.hpp"
#include "seeded_random.hpp"

namespace polychip::training {
namespace {

double host_mean_cross_entropy(const Tensor& logits, const std::vector<int32_t>& targets) {
  const std::vector<double> z = [&] {
    std::vector<double> v(static_cast<size_t>(logits.numel()));
    logits.copy_to_host(v.data());
    return v;
  }();
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  long double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = z.data() + r * classes;
    double max = row[0];
    for (int64_t c = 1; c < classes; ++c) max = std::max(max, row[c]);
    long double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<long double>(row[c] - max));
    total += std::log(sum) + max - row[targets[r]];
  }
  return static_cast<double>(total / rows);
}

TEST(TrainingGradient, WholeModelMatchesFiniteDifferencesInF64) {
  CpuRuntime rt;
  const TrainConfig config = train_preset("tiny");
  Gpt2Model model(config.model, config.batch_size, config.seq_len, DType::kF64, rt.ops);
  // GPT-2's init plus noise on every tensor, so biases and LayerNorm
  // parameters are not at their trivial values.
  std::vector<double> theta =
      gpt2_initial_params(model.layout(), config.model.num_layers, config.seed);
  SeededRandom noise(99);
  for (double& t : theta) t += 0.2 * noise.normal();
  model.set_params(theta);
  const auto corpus = generate_corpus(config.model.vocab_size, config.corpus_tokens, config.seed);
  const Batch batch = batch_at(corpus, 0, config.batch_size, config.seq_len);

  const double hal_loss = model.forward(batch.tokens, batch.targets);
  const double host_loss = host_mean_cross_entropy(model.logits(), batch.targets);
  EXPECT_NEAR(hal_loss, host_loss, 1e-6);
  model.backward();
  const std::vector<double> grad = model.grads();

  double max_grad = 0;
  for (double g : grad) max_grad = std::max(max_grad, std::abs(g));
  ASSERT_GT(max_grad, 1e-3);
  const double h = 1e-5;
  int checked = 0;
  for (const ParamInfo& p : model.layout().params()) {
    double worst = 0;
    int64_t worst_index = 0;
    for (int64_t i = 0; i < p.numel(); ++i) {
      const size_t at = static_cast<size_t>(p.offset + i);
      const double saved = theta[at];
      theta[at] = saved + h;
      model.set_params(theta);
      model.forward(batch.tokens, batch.targets);
      const double up = host_mean_cross_entropy(model.logits(), batch.targets);
      theta[at] = saved - h;
      model.set_params(theta);
      model.forward(batch.tokens, batch.targets);
      const double down = host_mean_cross_entropy(model.logits(), batch.targets);
      theta[at] = saved;
      const double numeric = (up - down) / (2 * h);
      // f32 LayerNorm statistics and attention log-sum-exp (the contract's
      // saved tensors) limit the analytic gradient to ~1e-7 relative.
      const double error =
          std::abs(numeric - grad[at]) / (1e-6 * max_grad + 1e-4 * std::abs(numeric));
      if (error > worst) worst = error, worst_index = i;
      ++checked;
    }
    EXPECT_LE(worst, 1.0) << p.name << "[" << worst_index << "]: analytic "
                          << grad[p.offset + worst_index];
  }
  EXPECT_EQ(checked, model.layout().total());
}

}  // namespace
}  // namespace polychip::training
