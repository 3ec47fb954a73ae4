// Pipeline stages of one model on the cpu adapter, the activations and
// gradients handed across by host copies: the last stage's loss and the
// stages' summed gradients are the whole model's, bit for bit (each
// parameter's gradient comes from one stage; the tied embedding's two terms
// are added once, as the whole model adds them), and a stage that holds two
// micro-batches' activations differentiates each from its own.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "corpus.hpp"
#include "gpt2_model.hpp"
#include "gpt2_params.hpp"
#include "polychip/error.hpp"
#include "runtime_fixture.hpp"

namespace polychip::training {
namespace {

Gpt2Config three_blocks() {
  return {.vocab_size = 16, .max_seq_len = 8, .num_layers = 3, .num_heads = 2, .channels = 8};
}

void hand_over(const Tensor& from, const Tensor& to) {
  std::vector<float> values = from.to_vector<float>();
  Tensor target = to;  // a handle of the same buffer
  target.copy_from_host(values);
}

// The stages' gradients summed in f32, stage by stage.
std::vector<float> summed_grads(const std::vector<Gpt2Model*>& stages) {
  std::vector<float> sum(stages.front()->grad_tensor().to_vector<float>().size(), 0.0f);
  for (const Gpt2Model* stage : stages) {
    const std::vector<float> g = stage->grad_tensor().to_vector<float>();
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += g[i];
  }
  return sum;
}

class PipelineStages : public ::testing::Test {
 protected:
  CpuRuntime rt;
  Gpt2Config config = three_blocks();
  std::vector<double> initial =
      gpt2_initial_params(Gpt2ParamLayout(config), config.num_layers, 1234);
  std::vector<int32_t> corpus = generate_corpus(config.vocab_size, 4096, 7);
  Batch batch(int64_t step) const { return batch_at(corpus, step, 2, 8); }
  Gpt2Model make(StageLayers stage, int slots = 1) {
    Gpt2Model m(config, 2, 8, DType::kF32, rt.ops, stage, slots);
    m.set_params(initial);
    return m;
  }
};

TEST_F(PipelineStages, StagesOfAnyCutAddUpToTheWholeModelBitForBit) {
  Gpt2Model whole = make({});
  const Batch b = batch(0);
  const double loss = whole.forward(b.tokens, b.targets);
  whole.backward();
  const std::vector<float> expected = whole.grad_tensor().to_vector<float>();
  for (const std::vector<int>& split : {std::vector<int>{2, 1}, {1, 2}, {1, 1, 1}}) {
    SCOPED_TRACE(split.size() == 3 ? "1:1:1" : split[0] == 2 ? "2:1" : "1:2");
    std::vector<Gpt2Model> stages;
    for (size_t s = 0; s < split.size(); ++s)
      stages.push_back(make(stage_layers(split, static_cast<int>(s))));
    double stage_loss = 0;
    for (size_t s = 0; s < stages.size(); ++s) {
      if (s > 0) hand_over(stages[s - 1].stage_output(0), stages[s].stage_input(0));
      stage_loss = stages[s].forward(b.tokens, b.targets);
      if (s + 1 < stages.size()) {
        EXPECT_EQ(stage_loss, 0.0);
      }
    }
    EXPECT_EQ(stage_loss, loss);
    for (size_t s = stages.size(); s-- > 0;) {
      if (s + 1 < stages.size())
        hand_over(stages[s + 1].input_gradient(), stages[s].output_gradient());
      stages[s].backward();
    }
    std::vector<Gpt2Model*> pointers;
    for (Gpt2Model& m : stages) pointers.push_back(&m);
    const std::vector<float> sum = summed_grads(pointers);
    size_t differing = 0;
    for (size_t i = 0; i < sum.size(); ++i) differing += sum[i] != expected[i];
    EXPECT_EQ(differing, 0u);
  }
}

TEST_F(PipelineStages, AStageHoldingTwoMicroBatchesDifferentiatesEachFromItsOwn) {
  const std::vector<int> split{2, 1};
  Gpt2Model first = make(stage_layers(split, 0), 2), last = make(stage_layers(split, 1));
  const Batch a = batch(0), b = batch(1);
  // The reference: micro-batch a alone through two one-slot stages.
  Gpt2Model first_alone = make(stage_layers(split, 0)), last_alone = make(stage_layers(split, 1));
  first_alone.forward(a.tokens, a.targets);
  hand_over(first_alone.stage_output(0), last_alone.stage_input(0));
  last_alone.forward(a.tokens, a.targets);
  last_alone.backward();
  hand_over(last_alone.input_gradient(), first_alone.output_gradient());
  first_alone.backward();
  // a, then b, forwarded before a's backward (1F1B's first stage).
  first.forward(a.tokens, a.targets, 0);
  first.forward(b.tokens, b.targets, 1);
  hand_over(first.stage_output(0), last.stage_input(0));
  last.forward(a.tokens, a.targets);
  last.backward();
  hand_over(last.input_gradient(), first.output_gradient());
  first.backward(0);
  EXPECT_EQ(first.grad_tensor().to_vector<float>(), first_alone.grad_tensor().to_vector<float>());
}

TEST_F(PipelineStages, AStageOutsideTheModelIsRefused) {
  EXPECT_THROW(make({2, 4}), Error);
  EXPECT_THROW(make({1, 1}), Error);
}

}  // namespace
}  // namespace polychip::training
