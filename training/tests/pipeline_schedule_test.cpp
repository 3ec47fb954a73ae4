// The 1F1B schedule, run for every stage at once in a model of blocking
// transfers: a stage's exchange completes only when the neighbour is posting
// the matching transfers in its own current exchange (a send waits for its
// receive). Every pipeline depth and micro-batch count below must finish,
// each stage must forward and then backward every micro-batch once, in order,
// with an activation slot free when a micro-batch arrives, and its one
// gradient buffer read (or sent) before the next overwrites it.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pipeline_schedule.hpp"
#include "polychip/error.hpp"

namespace polychip::training {
namespace {

using Kind = PipelineStep::Kind;

Transfer complement(Transfer t) {
  switch (t) {
    case Transfer::kSendActivation:
      return Transfer::kRecvActivation;
    case Transfer::kRecvActivation:
      return Transfer::kSendActivation;
    case Transfer::kSendGradient:
      return Transfer::kRecvGradient;
    case Transfer::kRecvGradient:
      return Transfer::kSendGradient;
  }
  return t;
}

int peer_of(int stage, Transfer t) {
  return t == Transfer::kSendActivation || t == Transfer::kRecvGradient ? stage + 1 : stage - 1;
}

struct StageState {
  std::vector<PipelineStep> steps;
  size_t pc = 0;
  int slots = 0;
  std::set<int> received_activation, forwarded, backwarded;
  std::vector<int> slot_holder;  // micro-batch in each slot, -1 free
  int gradient_in = -1;          // received, not yet used by its backward
  int gradient_out = -1;         // computed, not yet sent
  int last_backward = -1;
};

void simulate(int stages, int micro_batches) {
  SCOPED_TRACE(std::to_string(stages) + " stages, " + std::to_string(micro_batches) +
               " micro-batches");
  std::vector<StageState> st(static_cast<size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    st[s].steps = one_forward_one_backward(s, stages, micro_batches);
    st[s].slots = activation_slots(s, stages, micro_batches);
    st[s].slot_holder.assign(static_cast<size_t>(st[s].slots), -1);
  }
  const auto current = [&](int s) -> const PipelineStep* {
    return st[s].pc < st[s].steps.size() ? &st[s].steps[st[s].pc] : nullptr;
  };
  const auto matched = [&](int s) {
    const PipelineStep* step = current(s);
    if (!step || step->kind != Kind::kExchange) return false;
    for (const PipelineTransfer& t : step->transfers) {
      const int p = peer_of(s, t.what);
      if (p < 0 || p >= stages) return false;
      const PipelineStep* other = current(p);
      if (!other || other->kind != Kind::kExchange) return false;
      bool found = false;
      for (const PipelineTransfer& u : other->transfers)
        found |= u.what == complement(t.what) && u.micro_batch == t.micro_batch;
      if (!found) return false;
    }
    return true;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    std::vector<bool> ready(static_cast<size_t>(stages));
    for (int s = 0; s < stages; ++s) ready[s] = matched(s);
    for (int s = 0; s < stages; ++s) {
      const PipelineStep* step = current(s);
      if (!step) continue;
      StageState& me = st[s];
      const int k = step->micro_batch;
      if (step->kind == Kind::kForward) {
        ASSERT_TRUE(s == 0 || me.received_activation.count(k)) << "stage " << s << " F" << k;
        ASSERT_FALSE(me.forwarded.count(k));
        int& holder = me.slot_holder[static_cast<size_t>(k % me.slots)];
        ASSERT_TRUE(holder == -1 || holder == k)
            << "stage " << s << " F" << k << " slot of " << holder;
        holder = k;
        me.forwarded.insert(k);
      } else if (step->kind == Kind::kBackward) {
        ASSERT_TRUE(me.forwarded.count(k));
        ASSERT_EQ(k, me.last_backward + 1) << "stage " << s;
        ASSERT_TRUE(s + 1 == stages || me.gradient_in == k) << "stage " << s << " B" << k;
        ASSERT_EQ(me.gradient_out, -1) << "stage " << s << ": gradient of B" << me.gradient_out
                                       << " overwritten before it was sent";
        me.gradient_in = -1;
        if (s > 0) me.gradient_out = k;
        me.last_backward = k;
        me.slot_holder[static_cast<size_t>(k % me.slots)] = -1;
        me.backwarded.insert(k);
      } else {
        bool peers_ready = ready[s];
        for (const PipelineTransfer& t : step->transfers) {
          const int p = peer_of(s, t.what);
          peers_ready = peers_ready && p >= 0 && p < stages && ready[p];
        }
        if (!peers_ready) continue;
        for (const PipelineTransfer& t : step->transfers) {
          if (t.what == Transfer::kRecvActivation) {
            const int holder = me.slot_holder[static_cast<size_t>(t.micro_batch % me.slots)];
            ASSERT_EQ(holder, -1) << "stage " << s << " receives " << t.micro_batch
                                  << " into the slot of " << holder;
            me.received_activation.insert(t.micro_batch);
          } else if (t.what == Transfer::kRecvGradient) {
            ASSERT_EQ(me.gradient_in, -1);
            me.gradient_in = t.micro_batch;
          } else if (t.what == Transfer::kSendGradient) {
            ASSERT_EQ(me.gradient_out, t.micro_batch);
            me.gradient_out = -1;
          } else {
            ASSERT_TRUE(me.forwarded.count(t.micro_batch));
          }
        }
      }
      ++me.pc;
      progress = true;
    }
  }
  for (int s = 0; s < stages; ++s) {
    EXPECT_EQ(st[s].pc, st[s].steps.size()) << "stage " << s << " deadlocked";
    EXPECT_EQ(st[s].forwarded.size(), static_cast<size_t>(micro_batches));
    EXPECT_EQ(st[s].backwarded.size(), static_cast<size_t>(micro_batches));
    EXPECT_EQ(st[s].gradient_out, -1);
  }
}

TEST(PipelineSchedule, EveryDepthAndMicroBatchCountFinishesInOrderWithoutDeadlock) {
  for (int stages = 1; stages <= 5; ++stages)
    for (int micro_batches = 1; micro_batches <= 9; ++micro_batches)
      simulate(stages, micro_batches);
}

TEST(PipelineSchedule, TheFirstStageHoldsAsManyMicroBatchesAsThereAreStages) {
  EXPECT_EQ(activation_slots(0, 4, 8), 4);
  EXPECT_EQ(activation_slots(3, 4, 8), 1);
  EXPECT_EQ(activation_slots(0, 4, 2), 2);
  // The last stage alternates from the start: F0 B0 F1 B1.
  std::vector<std::pair<Kind, int>> compute;
  for (const PipelineStep& step : one_forward_one_backward(1, 2, 2))
    if (step.kind != Kind::kExchange) compute.emplace_back(step.kind, step.micro_batch);
  const std::vector<std::pair<Kind, int>> expected{
      {Kind::kForward, 0}, {Kind::kBackward, 0}, {Kind::kForward, 1}, {Kind::kBackward, 1}};
  EXPECT_EQ(compute, expected);
}

TEST(PipelineSchedule, LayerSplitsAreCheckedAndNamed) {
  EXPECT_EQ(parse_layer_split("3:1", 4), (std::vector<int>{3, 1}));
  EXPECT_EQ(stage_layers({3, 1}, 1).first, 3);
  EXPECT_EQ(stage_layers({3, 1}, 1).end, 4);
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"3:2", "the stages hold 5 blocks"},
           {"4", "two stages or more"},
           {"2:0:2", "stage 1 has no block"},
           {"2:x", "entry 2 ('x') is not a whole number"},
           {"2:", "entry 2 ('') is not a whole number"}}) {
    try {
      parse_layer_split(text, 4);
      ADD_FAILURE() << text << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(e.message().find(why), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace polychip::training
