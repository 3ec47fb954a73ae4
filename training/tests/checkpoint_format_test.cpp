// The exported directory against the Hugging Face GPT-2 layout (every
// tensor name and shape, config.json), the safetensors reader's refusals,
// and metrics.npy / model.safetensors read by NumPy when Debian's numpy is
// installed (an independent reader of both formats).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "checkpoint.hpp"
#include "polychip/error.hpp"
#include "runtime_fixture.hpp"
#include "safetensors.hpp"

namespace polychip::training {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// GPT2Model.state_dict() of transformers (the Conv1D weights are [in, out]),
// less the attention-mask buffers, which are not parameters.
std::map<std::string, Shape> hf_gpt2_state_dict(int64_t V, int64_t P, int64_t C, int64_t L) {
  std::map<std::string, Shape> names{
      {"wte.weight", {V, C}}, {"wpe.weight", {P, C}}, {"ln_f.weight", {C}}, {"ln_f.bias", {C}}};
  for (int64_t l = 0; l < L; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    names[h + "ln_1.weight"] = {C};
    names[h + "ln_1.bias"] = {C};
    names[h + "attn.c_attn.weight"] = {C, 3 * C};
    names[h + "attn.c_attn.bias"] = {3 * C};
    names[h + "attn.c_proj.weight"] = {C, C};
    names[h + "attn.c_proj.bias"] = {C};
    names[h + "ln_2.weight"] = {C};
    names[h + "ln_2.bias"] = {C};
    names[h + "mlp.c_fc.weight"] = {C, 4 * C};
    names[h + "mlp.c_fc.bias"] = {4 * C};
    names[h + "mlp.c_proj.weight"] = {4 * C, C};
    names[h + "mlp.c_proj.bias"] = {C};
  }
  return names;
}

class CheckpointFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("polychip_training_format_" + std::to_string(::getpid())))
               .string();
    trainer_.step();
    trainer_.step();
    write_checkpoint(dir_, trainer_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  CpuRuntime rt_;
  TrainConfig config_ = train_preset("tiny");
  Trainer trainer_{config_, rt_.ops};
  std::string dir_;
};

TEST_F(CheckpointFormat, EveryTensorHasTheHuggingFaceNameAndShape) {
  const Gpt2Config& m = config_.model;
  const auto expected = hf_gpt2_state_dict(m.vocab_size, m.max_seq_len, m.channels, m.num_layers);
  const SafetensorsFile file = decode_safetensors(read_file(dir_ + "/model.safetensors"));
  EXPECT_EQ(file.metadata.at("format"), "pt");  // transformers refuses other formats
  std::map<std::string, Shape> found;
  for (const NamedTensor& t : file.tensors) {
    EXPECT_EQ(t.dtype, "F32") << t.name;
    found[t.name] = t.shape;
  }
  EXPECT_EQ(found, expected);
  // The saved weights are the trainer's, tensor by tensor.
  const std::vector<double> params = trainer_.state().params;
  for (const ParamInfo& p : trainer_.model().layout().params()) {
    const std::vector<double> saved = f32_values(file.at(p.name));
    EXPECT_TRUE(std::equal(saved.begin(), saved.end(), params.begin() + p.offset)) << p.name;
  }
}

TEST_F(CheckpointFormat, ConfigJsonIsAHuggingFaceGpt2Config) {
  const auto config = nlohmann::json::parse(read_file(dir_ + "/config.json"));
  EXPECT_EQ(config["model_type"], "gpt2");
  EXPECT_EQ(config["architectures"][0], "GPT2LMHeadModel");
  EXPECT_EQ(config["vocab_size"], config_.model.vocab_size);
  EXPECT_EQ(config["n_positions"], config_.model.max_seq_len);
  EXPECT_EQ(config["n_embd"], config_.model.channels);
  EXPECT_EQ(config["n_layer"], config_.model.num_layers);
  EXPECT_EQ(config["n_head"], config_.model.num_heads);
  EXPECT_EQ(config["activation_function"], "gelu_new");  // HF's name for the tanh form
  EXPECT_EQ(config["tie_word_embeddings"], true);
}

TEST_F(CheckpointFormat, NumpyReadsTheCurvesAndTheWeights) {
  if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0)
    GTEST_SKIP() << "Debian's python3-numpy is not installed";
  const std::string script = dir_ + "/check.py";
  std::ofstream(script) << R"(import json, struct, sys, numpy as np
d = sys.argv[1]
m = np.load(d + '/metrics.npy')
assert m.shape == (2, 4) and m.dtype == np.float64, (m.shape, m.dtype)
assert list(m[:, 0]) == [1.0, 2.0]
assert abs(m[0, 1] - float(sys.argv[2])) == 0
raw = open(d + '/model.safetensors', 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
header = json.loads(raw[8:8 + n])
e = header['h.1.attn.c_attn.weight']
a = np.frombuffer(raw[8 + n + e['data_offsets'][0]:8 + n + e['data_offsets'][1]], '<f4')
assert a.reshape(e['shape']).shape == (8, 24)
print('ok')
)";
  std::ostringstream command;
  command.precision(17);
  command << "/usr/bin/python3 " << script << " " << dir_ << " " << trainer_.history()[0].loss;
  EXPECT_EQ(std::system(command.str().c_str()), 0) << command.str();
}

TEST(Gpt2Layout, TheGpt2SmallPresetHasGpt2SmallsParameterCount) {
  const TrainConfig small = train_preset("gpt2-small");
  const Gpt2Config& m = small.model;
  // transformers' GPT2Model("gpt2").num_parameters(): 124,439,808.
  const Gpt2ParamLayout layout(m);
  EXPECT_EQ(layout.total(), 124439808);
  std::map<std::string, Shape> shapes;
  for (const ParamInfo& p : layout.params()) shapes[p.name] = p.shape;
  EXPECT_EQ(shapes, hf_gpt2_state_dict(m.vocab_size, m.max_seq_len, m.channels, m.num_layers));
}

TEST(Safetensors, RoundTripsAndRefusesDamagedFiles) {
  const std::vector<NamedTensor> tensors{{"a", "F32", {2}, f32_bytes({1.5, -2})},
                                         {"b", "F32", {1, 1}, f32_bytes({3})}};
  const std::string file = encode_safetensors(tensors, {{"format", "pt"}});
  EXPECT_EQ((file.size() - 8 - 12) % 8, 0u);  // header padded to 8 bytes
  const SafetensorsFile back = decode_safetensors(file);
  EXPECT_EQ(f32_values(back.at("a")), (std::vector<double>{1.5, -2}));
  EXPECT_EQ(back.at("b").shape, (Shape{1, 1}));
  EXPECT_THROW(back.at("c"), Error);
  const auto refused = [](const std::string& damaged) {
    try {
      decode_safetensors(damaged);
    } catch (const Error& e) {
      return e.code() == StatusCode::kDataCorruption;
    }
    return false;
  };
  EXPECT_TRUE(refused(file.substr(0, 5)));                // shorter than the length
  EXPECT_TRUE(refused(file.substr(0, file.size() - 1)));  // truncated data
  EXPECT_TRUE(refused(file + "x"));                       // trailing bytes
  std::string bad_json = file;
  bad_json[8] = '[';
  EXPECT_TRUE(refused(bad_json));
  std::string huge_length = file;
  huge_length[7] = '\x7f';
  EXPECT_TRUE(refused(huge_length));
}

}  // namespace
}  // namespace polychip::training
