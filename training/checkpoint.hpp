// A run's directory: the model as Hugging Face GPT-2 weights, the optimizer
// state and the run's curves, so a run resumes bit for bit and any
// framework can load the weights (GPT2LMHeadModel.from_pretrained(dir)).
//   model.safetensors      HF GPT-2 tensor names and layouts, F32
//   config.json            HF GPT2Config
//   optimizer.safetensors  adamw.m, adamw.v: flat [num_params] F32
//   training_state.json    the TrainConfig and its preset, corpus hash, steps done, curves,
//                          a data-parallel run's rows per rank
//   metrics.npy            float64 [steps, 4]: step, loss, grad_norm, lr
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trainer.hpp"

namespace polychip::training {

nlohmann::json hf_gpt2_config(const Gpt2Config& config);
nlohmann::json train_config_json(const TrainConfig& config);

// The files a run's directory holds, training_state.json last.
inline constexpr const char* kCheckpointFiles[] = {"model.safetensors", "config.json",
                                                   "optimizer.safetensors", "metrics.npy",
                                                   "training_state.json"};

// Writes every file atomically (a reader sees the old or the new file):
// `state` is trainer.state(), taken by every rank of a sharded optimizer.
void write_checkpoint(const std::string& dir, const Trainer& trainer, const TrainerState& state);
// A single-device run's.
void write_checkpoint(const std::string& dir, const Trainer& trainer);
// Throws NOT_FOUND for a missing file, DATA_CORRUPTION for a damaged one,
// INVALID_ARGUMENT naming the field when the saved config differs.
TrainerState read_checkpoint(const std::string& dir, const TrainConfig& config);

}  // namespace polychip::training
