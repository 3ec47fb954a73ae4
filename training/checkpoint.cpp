#include "checkpoint.hpp"

#include <filesystem>

#include "data_parallel.hpp"
#include "npy_file.hpp"
#include "polychip/atomic_file.hpp"
#include "polychip/error.hpp"
#include "polychip/whole_file.hpp"
#include "safetensors.hpp"

namespace polychip::training {
namespace {

constexpr const char* kTrainingStateSchema = "polychip.training_state/1";

[[noreturn]] void corrupt(const std::string& what) {
  throw Error(StatusCode::kDataCorruption, "training checkpoint: " + what);
}

// A checkpoint's safetensors file; a damaged one is named in the refusal
// (a checkpoint holds two).
SafetensorsFile read_safetensors(const std::string& path) {
  const std::string file = read_whole_file(path, "training checkpoint");
  try {
    return decode_safetensors(file);
  } catch (const Error& e) {
    corrupt(path + ": " + e.message());
  }
}

std::vector<double> slice(const std::vector<double>& flat, const ParamInfo& p) {
  return {flat.begin() + p.offset, flat.begin() + p.offset + p.numel()};
}

std::string metrics_npy(const std::vector<StepRecord>& history) {
  std::vector<double> rows;
  for (const StepRecord& r : history)
    rows.insert(rows.end(), {static_cast<double>(r.step), r.loss, r.grad_norm, r.learning_rate});
  return encode_npy_f64(rows, static_cast<int64_t>(history.size()), 4);
}

// A saved config field that differs from this run's. When the two runs
// started from different presets the message names both and the one to
// pass: "written with batch_size = 2, this run has 8" left the user to
// guess which --preset wrote the checkpoint.
std::string config_mismatch(const std::string& dir, const std::string& key,
                            const nlohmann::json& saved, const nlohmann::json& ours,
                            const nlohmann::json& saved_preset, const std::string& our_preset) {
  const std::string head = "training checkpoint: " + dir + " was written with ";
  if (!saved_preset.is_string() || our_preset.empty() || saved_preset == our_preset)
    return head + key + " = " + saved.dump() + ", this run has " + ours.dump();
  const std::string preset = saved_preset.get<std::string>();
  return head + "preset " + preset + " (" + key + " = " + saved.dump() +
         "); this run uses preset " + our_preset + " (" + key + " = " + ours.dump() +
         "): pass --preset " + preset;
}

}  // namespace

nlohmann::json hf_gpt2_config(const Gpt2Config& c) {
  return {{"architectures", {"GPT2LMHeadModel"}},
          {"model_type", "gpt2"},
          {"vocab_size", c.vocab_size},
          {"n_positions", c.max_seq_len},
          {"n_ctx", c.max_seq_len},
          {"n_embd", c.channels},
          {"n_layer", c.num_layers},
          {"n_head", c.num_heads},
          {"n_inner", nullptr},
          {"activation_function", "gelu_new"},
          {"layer_norm_epsilon", c.layernorm_eps},
          {"resid_pdrop", 0.0},
          {"embd_pdrop", 0.0},
          {"attn_pdrop", 0.0},
          {"scale_attn_weights", true},
          {"tie_word_embeddings", true},
          {"bos_token_id", 0},
          {"eos_token_id", 0},
          {"torch_dtype", "float32"}};
}

nlohmann::json train_config_json(const TrainConfig& c) {
  const Gpt2Config& m = c.model;
  nlohmann::json j = {{"vocab_size", m.vocab_size},
                      {"max_seq_len", m.max_seq_len},
                      {"num_layers", m.num_layers},
                      {"num_heads", m.num_heads},
                      {"channels", m.channels},
                      {"layernorm_eps", m.layernorm_eps},
                      {"batch_size", c.batch_size},
                      {"seq_len", c.seq_len},
                      {"learning_rate", c.learning_rate},
                      {"beta1", c.beta1},
                      {"beta2", c.beta2},
                      {"adam_eps", c.adam_eps},
                      {"weight_decay", c.weight_decay},
                      {"grad_clip", c.grad_clip},
                      {"seed", c.seed},
                      {"corpus_tokens", c.corpus_tokens}};
  // Absent means fp32, so files written before bf16 existed keep their hashes.
  if (c.precision != "fp32") j["precision"] = c.precision;
  return j;
}

void write_checkpoint(const std::string& dir, const Trainer& trainer) {
  write_checkpoint(dir, trainer, trainer.state());
}

void write_checkpoint(const std::string& dir, const Trainer& trainer, const TrainerState& state) {
  std::filesystem::create_directories(dir);
  const Gpt2ParamLayout& layout = trainer.model().layout();
  std::vector<NamedTensor> weights;
  for (const ParamInfo& p : layout.params())
    weights.push_back({p.name, "F32", p.shape, f32_bytes(slice(state.params, p))});
  write_file_atomically(dir + "/model.safetensors",
                        encode_safetensors(weights, {{"format", "pt"}}));
  write_file_atomically(dir + "/config.json",
                        hf_gpt2_config(trainer.config().model).dump(2) + "\n");
  const Shape flat{layout.total()};
  write_file_atomically(dir + "/optimizer.safetensors",
                        encode_safetensors({{"adamw.m", "F32", flat, f32_bytes(state.adam_m)},
                                            {"adamw.v", "F32", flat, f32_bytes(state.adam_v)}},
                                           {{"format", "polychip"}}));
  nlohmann::json history = nlohmann::json::array();
  for (const StepRecord& r : state.history)
    history.push_back({r.step, r.loss, r.grad_norm, r.learning_rate});
  nlohmann::json run = {{"schema", kTrainingStateSchema},
                        {"config", train_config_json(trainer.config())},
                        {"corpus", "markov-v1"},
                        {"corpus_hash", trainer.corpus_hash()},
                        {"steps_done", trainer.steps_done()},
                        {"history_columns", {"step", "loss", "grad_norm", "learning_rate"}},
                        {"history", history}};
  if (!trainer.config().preset.empty()) run["preset"] = trainer.config().preset;
  // The split of the run that wrote the directory (a resumed run may use
  // another); with pipeline stages, rows_per_rank holds each pipeline's rows.
  if (const DataParallelRank* dp = trainer.data_parallel())
    run["data_parallel"] = {
        {"ranks", dp->ranks()}, {"pipeline_stages", dp->stages()}, {"rows_per_rank", dp->split()}};
  write_file_atomically(dir + "/training_state.json", run.dump(2) + "\n");
  write_file_atomically(dir + "/metrics.npy", metrics_npy(state.history));
}

TrainerState read_checkpoint(const std::string& dir, const TrainConfig& config) {
  const nlohmann::json run = nlohmann::json::parse(
      read_whole_file(dir + "/training_state.json", "training checkpoint"), nullptr, false);
  if (run.is_discarded()) corrupt(dir + "/training_state.json is not JSON");
  if (!run.is_object() || run.value("schema", nlohmann::json()) != kTrainingStateSchema ||
      !run.contains("config") || !run["config"].is_object() || !run.contains("history") ||
      !run["history"].is_array())
    corrupt(dir + "/training_state.json is not a " + kTrainingStateSchema + " training state");
  const nlohmann::json expected = train_config_json(config);
  // train_config_json leaves out precision when it is fp32.
  const auto field = [](const nlohmann::json& c, const std::string& key) {
    if (key == "precision" && !c.contains(key)) return nlohmann::json("fp32");
    return c.value(key, nlohmann::json());
  };
  std::vector<std::string> keys{"precision"};
  for (const auto& [key, value] : expected.items()) keys.push_back(key);
  for (const std::string& key : keys)
    if (field(run["config"], key) != field(expected, key))
      throw Error(StatusCode::kInvalidArgument,
                  config_mismatch(dir, key, field(run["config"], key), field(expected, key),
                                  run.value("preset", nlohmann::json()), config.preset));
  TrainerState state;
  const SafetensorsFile model = read_safetensors(dir + "/model.safetensors");
  const Gpt2ParamLayout layout(config.model);
  for (const ParamInfo& p : layout.params()) {
    const NamedTensor& t = model.at(p.name);
    if (t.shape != p.shape) corrupt(p.name + " has the wrong shape");
    const std::vector<double> v = f32_values(t);
    state.params.insert(state.params.end(), v.begin(), v.end());
  }
  const SafetensorsFile optimizer = read_safetensors(dir + "/optimizer.safetensors");
  for (const char* name : {"adamw.m", "adamw.v"})
    if (optimizer.at(name).shape != Shape{layout.total()})
      corrupt(std::string(name) + " in " + dir + "/optimizer.safetensors is not [" +
              std::to_string(layout.total()) + "], one value per parameter");
  state.adam_m = f32_values(optimizer.at("adamw.m"));
  state.adam_v = f32_values(optimizer.at("adamw.v"));
  // The history is the step count a resumed run continues from (and the
  // batches it cuts): rows numbered 1, 2, ... and as many as steps_done.
  const std::string where = "history in " + dir + "/training_state.json: ";
  try {
    for (const auto& row : run["history"]) {
      if (row.at(0) != state.history.size() + 1)
        corrupt(where + "row " + std::to_string(state.history.size() + 1) + " is step " +
                row.at(0).dump() + ", expected " + std::to_string(state.history.size() + 1));
      state.history.push_back({row.at(0).get<int64_t>(), row.at(1).get<double>(),
                               row.at(2).get<double>(), row.at(3).get<double>()});
    }
  } catch (const nlohmann::json::exception& e) {
    corrupt(where + e.what());
  }
  if (run.value("steps_done", nlohmann::json()) != state.history.size())
    corrupt(where + std::to_string(state.history.size()) + " rows, but steps_done is " +
            run.value("steps_done", nlohmann::json()).dump());
  return state;
}

}  // namespace polychip::training
