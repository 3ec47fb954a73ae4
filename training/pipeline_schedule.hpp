// Pipeline parallelism (--pp-layers): the model's blocks split into stages,
// one per rank of a pipeline, each stage's activations passed forward and
// their gradients back with the communicator's send/recv. This file holds
// what needs no device: the layer split and the 1F1B schedule (PipeDream-
// flush, as Megatron runs it): stage s of S forwards min(S - s - 1, M) of
// the M micro-batches ahead, then alternates one forward and one backward,
// then finishes the backwards, so it holds at most min(S - s, M) micro-
// batches' activations. Each transfer is posted in an exchange with the one
// it meets on the neighbour's side (a send paired with a receive, as one
// communicator group), so blocking sends cannot deadlock.
#pragma once

#include <string>
#include <vector>

namespace polychip::training {

// The blocks [first, end) of one stage.
struct StageLayers {
  int first = 0;
  int end = 0;
};

// "3:1": blocks per stage, by stages in order, each positive, summing to
// num_layers; INVALID_ARGUMENT naming the problem otherwise.
std::vector<int> parse_layer_split(const std::string& text, int num_layers);
// The blocks of `stage` (0-based) under `split`.
StageLayers stage_layers(const std::vector<int>& split, int stage);

enum class Transfer { kSendActivation, kRecvActivation, kSendGradient, kRecvGradient };

struct PipelineTransfer {
  Transfer what;
  int micro_batch;
};

struct PipelineStep {
  enum class Kind { kForward, kBackward, kExchange };
  Kind kind;
  int micro_batch = -1;                     // kForward, kBackward
  std::vector<PipelineTransfer> transfers;  // kExchange: posted together, with one neighbour
};

// Stage `stage`'s steps for one optimizer step of `micro_batches`; no
// transfer past either end of the pipeline. Activations go to stage + 1,
// gradients to stage - 1.
std::vector<PipelineStep> one_forward_one_backward(int stage, int stages, int micro_batches);

// The micro-batches whose activations a stage holds at once under that
// schedule: micro-batch k uses slot k % this.
int activation_slots(int stage, int stages, int micro_batches);

}  // namespace polychip::training
