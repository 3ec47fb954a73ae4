// The training loop on the cpu adapter: the loss falls, a run reproduces
// itself bit for bit, and checkpoint + resume continues bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <tuple>

#include "checkpoint.hpp"
#include "corpus.hpp"
#include "polychip/error.hpp"
#include "reference_trace.hpp"
#include "refusal.hpp"
#include "runtime_fixture.hpp"
#include "safetensors.hpp"
#include "trainer.hpp"

namespace polychip::training {
namespace {

std::string temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("polychip_training_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

void expect_same_history(const std::vector<StepRecord>& a, const std::vector<StepRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].step, b[i].step);
    // Bitwise: == on doubles that came from the same f32 computation.
    EXPECT_EQ(a[i].loss, b[i].loss) << "step " << a[i].step;
    EXPECT_EQ(a[i].grad_norm, b[i].grad_norm) << "step " << a[i].step;
  }
}

TEST(Trainer, LossFallsOverFiftySteps) {
  CpuRuntime rt;
  // tiny's 16 tokens a step are too noisy a signal: 256 tokens, 16 channels.
  TrainConfig config = train_preset("tiny");
  config.model.channels = 16;
  config.batch_size = 32;
  config.learning_rate = 1e-2;
  Trainer trainer(config, rt.ops);
  double first = 0, last = 0;
  for (int s = 0; s < 50; ++s) {
    const StepRecord r = trainer.step();
    ASSERT_TRUE(std::isfinite(r.loss) && std::isfinite(r.grad_norm)) << "step " << r.step;
    if (s < 5) first += r.loss / 5;
    if (s >= 45) last += r.loss / 5;
  }
  EXPECT_NEAR(first, std::log(16.0), 0.3);  // uniform over the vocabulary at init
  EXPECT_LT(last, first - 1.0) << "mean loss of steps 1-5 " << first << ", 46-50 " << last;
}

TEST(Trainer, ARunReproducesItselfBitForBit) {
  CpuRuntime rt;
  const TrainConfig config = train_preset("tiny");
  Trainer a(config, rt.ops), b(config, rt.ops);
  for (int s = 0; s < 5; ++s) a.step(), b.step();
  expect_same_history(a.history(), b.history());
  EXPECT_EQ(a.state().params, b.state().params);
  EXPECT_EQ(a.state().adam_v, b.state().adam_v);
}

// Gradient accumulation is the same mathematics in another summation order:
// micro-batches of 1 row and of 2 rows of an 8-row batch against one pass.
TEST(Trainer, MicroBatchesAccumulateToTheOnePassGradient) {
  CpuRuntime rt;
  TrainConfig config = train_preset("tiny");
  config.batch_size = 8;
  for (const char* precision : {"fp32", "bf16"}) {
    config.precision = precision;
    Trainer whole(config, rt.ops), ones(config, rt.ops, nullptr, 1),
        twos(config, rt.ops, nullptr, 2);
    EXPECT_EQ(whole.micro_batches(), 1);
    EXPECT_EQ(ones.micro_batches(), 8);
    EXPECT_EQ(twos.micro_batch_rows(), 2);
    // bf16: each micro-batch's gradient is rounded to bf16 before the fp32 sum.
    const double rtol = config.precision == "fp32" ? 1e-5 : 2e-2;
    for (int s = 0; s < 5; ++s) {
      const StepRecord w = whole.step(), o = ones.step(), t = twos.step();
      EXPECT_NEAR(o.loss, w.loss, rtol * w.loss) << precision << " step " << w.step;
      EXPECT_NEAR(t.loss, w.loss, rtol * w.loss) << precision << " step " << w.step;
      EXPECT_NEAR(o.grad_norm, w.grad_norm, rtol * w.grad_norm) << precision << " step " << w.step;
      EXPECT_NEAR(t.grad_norm, w.grad_norm, rtol * w.grad_norm) << precision << " step " << w.step;
    }
  }
}

TEST(Trainer, AMicroBatchThatDoesNotDivideTheBatchIsRefused) {
  CpuRuntime rt;
  const TrainConfig config = train_preset("tiny");  // 2 rows
  for (const int64_t micro_batch : {3, -1}) {
    try {
      Trainer trainer(config, rt.ops, nullptr, micro_batch);
      ADD_FAILURE() << micro_batch << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(e.message().find("--micro-batch " + std::to_string(micro_batch) +
                                 ": the batch's 2 rows are not a whole number of micro-batches"),
                std::string::npos)
          << e.message();
    }
  }
}

TEST(Trainer, GradientClippingBoundsTheUpdate) {
  CpuRuntime rt;
  TrainConfig config = train_preset("tiny");
  config.grad_clip = 1e-3;  // far below the tiny model's first gradient norm
  Trainer clipped(config, rt.ops);
  config.grad_clip = 0;
  Trainer unclipped(config, rt.ops);
  const StepRecord c = clipped.step(), u = unclipped.step();
  EXPECT_EQ(c.grad_norm, u.grad_norm);  // reported before clipping
  ASSERT_GT(u.grad_norm, 1e-2);
  // Adam's first step is lr * sign-like: clipping changes the second moment's
  // epsilon share only, so compare the moments, which see the clipped grads.
  const TrainerState cs = clipped.state(), us = unclipped.state();
  double m_clipped = 0, m_unclipped = 0;
  for (size_t i = 0; i < cs.adam_m.size(); ++i)
    m_clipped += cs.adam_m[i] * cs.adam_m[i], m_unclipped += us.adam_m[i] * us.adam_m[i];
  // m = (1 - beta1) g, so |m| = 0.1 |g|.
  EXPECT_NEAR(std::sqrt(m_clipped), 0.1 * 1e-3, 1e-6);
  EXPECT_NEAR(std::sqrt(m_unclipped), 0.1 * u.grad_norm, 1e-3 * u.grad_norm);
}

TEST(Trainer, WeightDecayIsDecoupledFromTheGradient) {
  CpuRuntime rt;
  TrainConfig config = train_preset("tiny");
  const std::vector<double> initial = Trainer(config, rt.ops).state().params;
  Trainer plain(config, rt.ops);
  config.weight_decay = 0.5;
  Trainer decayed(config, rt.ops);
  plain.step();
  decayed.step();
  EXPECT_EQ(plain.history()[0].grad_norm, decayed.history()[0].grad_norm);
  // p' = p - lr (wd p + adam(g)): the runs differ by lr wd p, whatever g.
  const std::vector<double> a = plain.state().params, b = decayed.state().params;
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i] - b[i], config.learning_rate * 0.5 * initial[i], 1e-7) << "parameter " << i;
}

TEST(Trainer, CheckpointAndResumeContinueBitForBit) {
  CpuRuntime rt;
  const TrainConfig config = train_preset("tiny");
  Trainer straight(config, rt.ops);
  for (int s = 0; s < 6; ++s) straight.step();

  const std::string dir = temp_dir("resume");
  {
    Trainer first_half(config, rt.ops);
    for (int s = 0; s < 3; ++s) first_half.step();
    write_checkpoint(dir, first_half);
  }
  Trainer resumed(config, rt.ops);
  resumed.restore(read_checkpoint(dir, config));
  EXPECT_EQ(resumed.steps_done(), 3);
  for (int s = 0; s < 3; ++s) resumed.step();
  expect_same_history(straight.history(), resumed.history());
  EXPECT_EQ(straight.state().params, resumed.state().params);
  EXPECT_EQ(straight.state().adam_m, resumed.state().adam_m);
  std::filesystem::remove_all(dir);
}

// A tiny run's checkpoint after a few steps, in a scratch folder of its own,
// for the tests that damage it.
struct CheckpointedRun {
  CheckpointedRun(const std::string& name, int steps) : dir(temp_dir(name)) {
    for (int s = 0; s < steps; ++s) trainer.step();
    write_checkpoint(dir, trainer);
  }
  ~CheckpointedRun() { std::filesystem::remove_all(dir); }
  // read_checkpoint's refusal of the folder for `resumed_with` (refusal_of).
  std::string refusal(StatusCode expected, const TrainConfig& resumed_with) const {
    return refusal_of(expected, [&] { read_checkpoint(dir, resumed_with); });
  }
  // A DATA_CORRUPTION refusal of the folder holding `reason`.
  void expect_corrupt(const char* what, const std::string& reason) const {
    const std::string why = refusal(StatusCode::kDataCorruption, config);
    EXPECT_NE(why.find(reason), std::string::npos) << what << ": " << why;
  }

  CpuRuntime rt;
  const TrainConfig config = train_preset("tiny");
  const std::string dir;
  Trainer trainer{config, rt.ops};
};

TEST(Trainer, ResumeWithAnotherConfigIsRefusedNamingTheField) {
  const CheckpointedRun run("mismatch", 1);
  TrainConfig other = run.config;
  other.learning_rate = 5e-4;
  const std::string refusal = run.refusal(StatusCode::kInvalidArgument, other);
  EXPECT_NE(refusal.find("learning_rate"), std::string::npos) << refusal;
  EXPECT_THROW(read_checkpoint(run.dir + "_missing", run.config), Error);
}

TEST(Trainer, DamagedCheckpointIsRefusedAsDataCorruption) {
  CheckpointedRun run("damaged", 1);
  const std::string& dir = run.dir;
  std::filesystem::resize_file(dir + "/model.safetensors", 100);
  run.expect_corrupt("a truncated model.safetensors",
                     "model.safetensors: safetensors: header length");
  write_checkpoint(dir, run.trainer);
  std::ofstream(dir + "/training_state.json") << R"({"config": 3, "history": []})";
  run.expect_corrupt("a config that is not an object",
                     "training_state.json is not a polychip.training_state/1 training state");
  std::ofstream(dir + "/training_state.json") << "{not json";
  run.expect_corrupt("a training_state.json that is not JSON", "training_state.json is not JSON");
}

// A training_state.json or optimizer.safetensors edited into something the
// run never wrote: a resumed run would continue from the wrong step (and cut
// the wrong batches) or with moments of the wrong length.
TEST(Trainer, ACheckpointThatDisagreesWithItselfIsRefusedNamingWhat) {
  const CheckpointedRun run("inconsistent", 2);
  const std::string& dir = run.dir;
  const std::string state_path = dir + "/training_state.json";
  const nlohmann::json state = nlohmann::json::parse(std::ifstream(state_path));
  const auto write_state = [&](const nlohmann::json& j) { std::ofstream(state_path) << j.dump(); };
  nlohmann::json edited = state;
  edited["history"][1][0] = 5;
  write_state(edited);
  run.expect_corrupt("a history that skips to step 5", "row 2 is step 5, expected 2");
  edited = state;
  edited["history"][0][0] = 1.5;
  write_state(edited);
  run.expect_corrupt("a fractional step", "row 1 is step 1.5");
  edited = state;
  edited["history"].erase(1);
  write_state(edited);
  run.expect_corrupt("a history shorter than steps_done", "1 rows, but steps_done is 2");
  edited = state;
  edited.erase("steps_done");
  write_state(edited);
  run.expect_corrupt("no steps_done", "steps_done is null");
  edited = state;
  edited["schema"] = "polychip.reference_trace/1";
  write_state(edited);
  run.expect_corrupt("another schema", "not a polychip.training_state/1 training state");
  edited["schema"] = 1;
  write_state(edited);
  run.expect_corrupt("a schema that is not a string", "not a polychip.training_state/1");
  // config and history missing, or a list and an object.
  for (const auto& [key, wrong] :
       {std::pair<std::string, nlohmann::json>{"config", nlohmann::json::array()},
        {"history", nlohmann::json::object()}}) {
    edited = state;
    edited.erase(key);
    write_state(edited);
    run.expect_corrupt("no config or history", "not a polychip.training_state/1 training state");
    edited[key] = wrong;
    write_state(edited);
    run.expect_corrupt("a config or history of the wrong type", "not a polychip.training_state/1");
  }
  // A config field left out is named, and said to be missing.
  edited = state;
  edited["config"].erase("seed");
  write_state(edited);
  const std::string why = run.refusal(StatusCode::kInvalidArgument, run.config);
  EXPECT_NE(why.find("was written with seed = null, this run has 1234"), std::string::npos) << why;
  write_state(state);
  EXPECT_EQ(read_checkpoint(dir, run.config).history.size(), 2u);

  const int64_t n = run.trainer.model().layout().total();
  const auto write_moments = [&](int64_t m_count, int64_t v_count) {
    std::ofstream(dir + "/optimizer.safetensors", std::ios::binary) << encode_safetensors(
        {{"adamw.m", "F32", {m_count}, f32_bytes(std::vector<double>(m_count))},
         {"adamw.v", "F32", {v_count}, f32_bytes(std::vector<double>(v_count))}},
        {});
  };
  write_moments(n, n - 1);
  run.expect_corrupt("adamw.v one value short",
                     "adamw.v in " + dir + "/optimizer.safetensors is not [");
  write_moments(n + 1, n);
  run.expect_corrupt("adamw.m one value long", "adamw.m in");
}

// What the hooks saw: "point@device_type" in call order.
std::vector<std::string> hook_calls;
polychip_status record_hook(const polychip_hook_args* a) {
  hook_calls.push_back(std::string(a->hook_point) + "@" + a->device_type);
  return POLYCHIP_OK;
}
polychip_status failing_hook(const polychip_hook_args*) { return POLYCHIP_INTERNAL; }

TEST(Trainer, CallsTheTrainingHookPointsForItsDeviceType) {
  CpuRuntime rt;
  Dispatcher& d = rt.runtime.dispatcher();
  hook_calls.clear();
  for (const char* point :
       {"train.before_forward", "train.after_backward", "train.before_optimizer_step"})
    d.register_hook("cpu.host", point, &record_hook, "trainer_test");
  Trainer trainer(train_preset("tiny"), rt.ops);
  trainer.step();
  trainer.step();
  const std::vector<std::string> one_step{"train.before_forward@cpu.host",
                                          "train.after_backward@cpu.host",
                                          "train.before_optimizer_step@cpu.host"};
  std::vector<std::string> expected = one_step;
  expected.insert(expected.end(), one_step.begin(), one_step.end());
  EXPECT_EQ(hook_calls, expected);
}

TEST(Trainer, AFailingHookStopsTheStepNamingIt) {
  CpuRuntime rt;
  rt.runtime.dispatcher().register_hook("cpu.host", "train.after_backward", &failing_hook,
                                        "trainer_test");
  Trainer trainer(train_preset("tiny"), rt.ops);
  try {
    trainer.step();
    FAIL() << "the failing hook was ignored";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("train.after_backward"), std::string::npos) << e.message();
  }
  EXPECT_EQ(trainer.steps_done(), 0);
}

TEST(Trainer, BadConfigIsRefused) {
  CpuRuntime rt;
  TrainConfig config = train_preset("tiny");
  config.model.num_heads = 3;  // 8 channels do not split into 3 heads
  EXPECT_THROW(Trainer(config, rt.ops), Error);
  EXPECT_THROW(train_preset("huge"), Error);
}

// A recorded trace: every step's loss and gradient norm, the L2 norm of each
// tensor's step-1 gradient (recomputed here from the gradients), what ran
// it, and a content hash that verifies; a trainer that already ran is refused.
TEST(ReferenceTrace, RecordsTheRunStepByStep) {
  CpuRuntime rt;
  const TrainConfig config = train_preset("tiny");
  Trainer one_step(config, rt.ops);
  one_step.step();
  const std::vector<double> grads = host_values(one_step.master_grads());
  Trainer trainer(config, rt.ops);
  const ReferenceTrace t = record_trace(trainer, "tiny", 3, "sim.nvidia_emu");
  EXPECT_EQ(trainer.steps_done(), 3);
  ASSERT_EQ(t.loss.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(t.loss[i], trainer.history()[i].loss);
    EXPECT_EQ(t.grad_norm[i], trainer.history()[i].grad_norm);
  }
  const auto& params = trainer.model().layout().params();
  ASSERT_EQ(t.step1_grad_norms.size(), params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    double sum = 0;
    for (int64_t i = 0; i < params[k].numel(); ++i)
      sum += grads[params[k].offset + i] * grads[params[k].offset + i];
    EXPECT_EQ(t.step1_grad_norms[k].first, params[k].name);
    EXPECT_NEAR(t.step1_grad_norms[k].second, std::sqrt(sum), 1e-12 * std::sqrt(sum))
        << params[k].name;
  }
  EXPECT_EQ(t.preset, "tiny");
  EXPECT_EQ(t.device_type, "sim.nvidia_emu");
  EXPECT_EQ(t.provenance, "emulated");
  EXPECT_EQ(t.workload, train_config_json(config));
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(trainer.corpus_hash()));
  EXPECT_EQ(t.corpus_hash, hash);
  EXPECT_EQ(parse_trace(trace_json(t)).content_hash, t.content_hash);
  EXPECT_THROW(record_trace(trainer, "tiny", 1, "cpu.host"), Error);
  EXPECT_EQ(trace_provenance("cpu.host"), "device");
  // SHA-256 test vectors (FIPS 180-2).
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// FNV-1a 64 over the tokens' little-endian bytes (values from an
// independent implementation), and the default workload's corpus is the
// one the shipped reference trace was recorded on.
TEST(Corpus, TheHashIsFnv1aOfTheLittleEndianTokens) {
  EXPECT_EQ(corpus_hash({}), 0xCBF29CE484222325ull);
  EXPECT_EQ(corpus_hash({0x61, -2}), 0x811a37f9012afbb1ull);
  EXPECT_EQ(corpus_hash({0x01020304}), 0xb345225e3644edb5ull);
  const TrainConfig c = train_preset("default");
  EXPECT_EQ(corpus_hash(generate_corpus(c.model.vocab_size, c.corpus_tokens, c.seed)),
            0x7995e020fd8f5661ull);  // gpt2_default_fp32.json's corpus_hash
}

// Each token has at most kSuccessors successors, the first the most likely.
TEST(Corpus, IsAMarkovChainOfFourWeightedSuccessors) {
  const int64_t vocab = 16;
  const std::vector<int32_t> tokens = generate_corpus(vocab, 1 << 16, 7);
  std::map<std::pair<int32_t, int32_t>, int> transitions;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    ASSERT_GE(tokens[i], 0);
    ASSERT_LT(tokens[i], vocab);
    ++transitions[{tokens[i], tokens[i + 1]}];
  }
  std::map<int32_t, std::vector<int>> counts;
  for (const auto& [pair, n] : transitions) counts[pair.first].push_back(n);
  EXPECT_EQ(counts.size(), static_cast<size_t>(vocab));
  for (auto& [token, n] : counts) {
    EXPECT_LE(n.size(), static_cast<size_t>(kSuccessors)) << token;
    // The likeliest successor takes about 8/15 of the transitions (more
    // when two of its successors are the same token).
    const int total = std::accumulate(n.begin(), n.end(), 0);
    EXPECT_GT(*std::max_element(n.begin(), n.end()), total * 4 / 10) << token;
  }
}

// Sequence b of step s starts at ((s * B + b) * T) mod (N - T); targets
// are the next tokens.
TEST(Corpus, BatchesAreCutAtFixedPositionsFromTheStep) {
  std::vector<int32_t> corpus(20);
  std::iota(corpus.begin(), corpus.end(), 100);
  const Batch step0 = batch_at(corpus, 0, 3, 4);
  EXPECT_EQ(step0.tokens,
            (std::vector<int32_t>{100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111}));
  EXPECT_EQ(step0.targets,
            (std::vector<int32_t>{101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112}));
  // Step 1 starts at 12, 16 mod 16 = 0 and 20 mod 16 = 4.
  const Batch step1 = batch_at(corpus, 1, 3, 4);
  EXPECT_EQ(step1.tokens,
            (std::vector<int32_t>{112, 113, 114, 115, 100, 101, 102, 103, 104, 105, 106, 107}));
  EXPECT_EQ(step1.targets.front(), 113);
  EXPECT_EQ(step1.targets.back(), 108);
  // The last start, N - T - 1, reaches the corpus's last token as a target.
  const Batch last = batch_at(corpus, 18, 1, 1);
  EXPECT_EQ(last.tokens, std::vector<int32_t>{118});
  EXPECT_EQ(last.targets, std::vector<int32_t>{119});
  EXPECT_EQ(batch_at(corpus, 19, 1, 1).tokens, std::vector<int32_t>{100});  // 19 mod 19
}

// validate() at each bound: the last value accepted and the first refused,
// the refusal naming the field.
TEST(TrainConfig, ValidateRefusesEachFieldJustPastItsBound) {
  const TrainConfig tiny = train_preset("tiny");
  const auto refusal = [](const TrainConfig& c) {
    return refusal_of(StatusCode::kInvalidArgument, [&] { validate(c); });
  };
  using Edit = std::function<void(TrainConfig&)>;
  const std::vector<std::tuple<Edit, Edit, std::string>> bounds{
      {[](TrainConfig& c) { c.model.vocab_size = 2; },
       [](TrainConfig& c) { c.model.vocab_size = 1; }, "vocab_size must be >= 2"},
      {[](TrainConfig& c) { c.model.num_layers = 1; },
       [](TrainConfig& c) { c.model.num_layers = 0; }, "num_layers must be >= 1"},
      {[](TrainConfig& c) { c.model.num_heads = 1; }, [](TrainConfig& c) { c.model.num_heads = 0; },
       "channels must be a positive multiple of num_heads"},
      {[](TrainConfig& c) { c.model.num_heads = c.model.channels = 1; },
       [](TrainConfig& c) { c.model.channels = 0; },
       "channels must be a positive multiple of num_heads"},
      {[](TrainConfig& c) { c.model.channels = 3 * c.model.num_heads; },
       [](TrainConfig& c) { c.model.channels = 3 * c.model.num_heads + 1; },
       "channels must be a positive multiple of num_heads"},
      {[](TrainConfig& c) { c.batch_size = 1; }, [](TrainConfig& c) { c.batch_size = 0; },
       "batch_size must be >= 1"},
      {[](TrainConfig& c) { c.seq_len = 1; }, [](TrainConfig& c) { c.seq_len = 0; },
       "seq_len must be in [1, max_seq_len]"},
      {[](TrainConfig& c) { c.seq_len = c.model.max_seq_len; },
       [](TrainConfig& c) { c.seq_len = c.model.max_seq_len + 1; },
       "seq_len must be in [1, max_seq_len]"},
      {[](TrainConfig& c) { c.corpus_tokens = c.seq_len + 1; },
       [](TrainConfig& c) { c.corpus_tokens = c.seq_len; }, "corpus_tokens must exceed seq_len"},
      {[](TrainConfig& c) { c.learning_rate = 0; }, [](TrainConfig& c) { c.learning_rate = -1e-9; },
       "learning_rate, grad_clip and weight_decay must be finite and >= 0"},
      {[](TrainConfig& c) { c.grad_clip = 0; }, [](TrainConfig& c) { c.grad_clip = NAN; },
       "learning_rate, grad_clip and weight_decay must be finite and >= 0"},
      {[](TrainConfig& c) { c.weight_decay = 1e300; },
       [](TrainConfig& c) { c.weight_decay = INFINITY; },
       "learning_rate, grad_clip and weight_decay must be finite and >= 0"},
      {[](TrainConfig& c) { c.precision = "bf16"; }, [](TrainConfig& c) { c.precision = "fp16"; },
       "precision must be fp32 or bf16, got 'fp16'"}};
  for (const auto& [last_accepted, first_refused, reason] : bounds) {
    TrainConfig c = tiny;
    last_accepted(c);
    EXPECT_EQ(refusal(c), "accepted") << reason;
    c = tiny;
    first_refused(c);
    EXPECT_EQ(refusal(c), "training config: " + reason) << refusal(c);
  }
  for (const char* preset : {"tiny", "default", "gpt2-small"})
    EXPECT_EQ(refusal(train_preset(preset)), "accepted") << preset;
}

}  // namespace
}  // namespace polychip::training
