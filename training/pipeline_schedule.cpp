#include "pipeline_schedule.hpp"

#include <algorithm>

#include "polychip/error.hpp"

namespace polychip::training {

std::vector<int> parse_layer_split(const std::string& text, int num_layers) {
  const auto fail = [&](const std::string& why) {
    throw Error(StatusCode::kInvalidArgument,
                "--pp-layers '" + text + "': " + why +
                    "; give the blocks of each stage, by stages in order, as A:B[:C...] summing "
                    "to the model's " +
                    std::to_string(num_layers));
  };
  std::vector<int> split;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(text.find(':', begin), text.size());
    const std::string entry = text.substr(begin, end - begin);
    const bool digits =
        !entry.empty() && entry.size() <= 6 &&
        std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits)
      fail("entry " + std::to_string(split.size() + 1) + " ('" + entry +
           "') is not a whole number");
    const int layers = std::stoi(entry);
    if (layers < 1) fail("stage " + std::to_string(split.size()) + " has no block");
    split.push_back(layers);
    if (end == text.size()) break;
    begin = end + 1;
  }
  if (split.size() < 2) fail("a pipeline has two stages or more");
  int total = 0;
  for (int layers : split) total += layers;
  if (total != num_layers) fail("the stages hold " + std::to_string(total) + " blocks");
  return split;
}

StageLayers stage_layers(const std::vector<int>& split, int stage) {
  if (stage < 0 || static_cast<size_t>(stage) >= split.size())
    throw Error(StatusCode::kInvalidArgument,
                "pipeline: stage " + std::to_string(stage) + " outside 0.." +
                    std::to_string(static_cast<int>(split.size()) - 1));
  StageLayers layers;
  for (int s = 0; s < stage; ++s) layers.first += split[static_cast<size_t>(s)];
  layers.end = layers.first + split[static_cast<size_t>(stage)];
  return layers;
}

int activation_slots(int stage, int stages, int micro_batches) {
  return std::min(stages - stage, micro_batches);
}

std::vector<PipelineStep> one_forward_one_backward(int stage, int stages, int micro_batches) {
  if (stages < 1 || stage < 0 || stage >= stages || micro_batches < 1)
    throw Error(StatusCode::kInvalidArgument, "pipeline: stage " + std::to_string(stage) + " of " +
                                                  std::to_string(stages) + " with " +
                                                  std::to_string(micro_batches) + " micro-batches");
  const bool first = stage == 0, last = stage + 1 == stages;
  std::vector<PipelineStep> steps;
  // An exchange of the transfers that have a neighbour on their side.
  const auto exchange = [&](std::vector<PipelineTransfer> transfers) {
    std::erase_if(transfers, [&](const PipelineTransfer& t) {
      const bool downstream =
          t.what == Transfer::kSendActivation || t.what == Transfer::kRecvGradient;
      return downstream ? last : first;
    });
    if (!transfers.empty())
      steps.push_back({PipelineStep::Kind::kExchange, -1, std::move(transfers)});
  };
  const auto compute = [&](PipelineStep::Kind kind, int k) { steps.push_back({kind, k, {}}); };
  const int warmup = std::min(stages - stage - 1, micro_batches);
  const int steady = micro_batches - warmup;
  for (int k = 0; k < warmup; ++k) {
    exchange({{Transfer::kRecvActivation, k}});
    compute(PipelineStep::Kind::kForward, k);
    exchange({{Transfer::kSendActivation, k}});
  }
  if (steady > 0) exchange({{Transfer::kRecvActivation, warmup}});
  for (int i = 0; i < steady; ++i) {
    compute(PipelineStep::Kind::kForward, warmup + i);
    exchange({{Transfer::kSendActivation, warmup + i}, {Transfer::kRecvGradient, i}});
    compute(PipelineStep::Kind::kBackward, i);
    if (i + 1 == steady)
      exchange({{Transfer::kSendGradient, i}});
    else
      exchange({{Transfer::kSendGradient, i}, {Transfer::kRecvActivation, warmup + i + 1}});
  }
  for (int k = steady; k < micro_batches; ++k) {
    exchange({{Transfer::kRecvGradient, k}});
    compute(PipelineStep::Kind::kBackward, k);
    exchange({{Transfer::kSendGradient, k}});
  }
  return steps;
}

}  // namespace polychip::training
