// The exported directory against the Hugging Face GPT-2 layout (every
// tensor name and shape, config.json), the safetensors reader's refusals,
// and metrics.npy / model.safetensors read by NumPy when Debian's numpy is
// installed (an independent reader of both formats).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "checkpoint.hpp"
#include "npy_file.hpp"
#include "polychip/error.hpp"
#include "refusal.hpp"
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

// kCheckpointFiles (what `train --out` refuses to write over in a folder no
// run wrote) names exactly the files write_checkpoint writes.
TEST_F(CheckpointFormat, TheDirectoryHoldsExactlyTheCheckpointFiles) {
  std::set<std::string> written, named(std::begin(kCheckpointFiles), std::end(kCheckpointFiles));
  for (const auto& entry : std::filesystem::directory_iterator(dir_))
    written.insert(entry.path().filename().string());
  EXPECT_EQ(written, named);
}

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

// Every dtype's element size: a tensor of 3 elements takes 3 x that many
// bytes, one byte fewer is refused.
TEST(Safetensors, EveryDtypeHasItsElementSize) {
  const std::vector<std::pair<std::string, size_t>> sizes{
      {"F64", 8},  {"I64", 8}, {"F32", 4}, {"I32", 4}, {"F16", 2},
      {"BF16", 2}, {"I16", 2}, {"U8", 1},  {"I8", 1},  {"BOOL", 1}};
  for (const auto& [dtype, size] : sizes) {
    const std::string bytes(3 * size, '\x5a');
    const SafetensorsFile back =
        decode_safetensors(encode_safetensors({{"t", dtype, {3}, bytes}}, {}));
    EXPECT_EQ(back.at("t").dtype, dtype);
    EXPECT_EQ(back.at("t").bytes, bytes) << dtype;
    EXPECT_THROW(encode_safetensors({{"t", dtype, {3}, bytes.substr(1)}}, {}), Error) << dtype;
  }
}

// Empty tensors (a dimension of 0) and a file of none are valid safetensors;
// an empty tensor may begin where the next one does, whatever the names'
// order in the header.
TEST(Safetensors, EmptyTensorsAndFilesRoundTrip) {
  EXPECT_TRUE(decode_safetensors(encode_safetensors({}, {})).tensors.empty());
  EXPECT_EQ(decode_safetensors(encode_safetensors({}, {{"format", "pt"}})).metadata.at("format"),
            "pt");
  const std::vector<NamedTensor> tensors{{"a", "F32", {2}, f32_bytes({1, 2})},
                                         {"z", "F32", {0}, f32_bytes({})},
                                         {"m", "F32", {1}, f32_bytes({3})},
                                         {"b", "F32", {2, 0}, ""},
                                         {"c", "F32", {1}, f32_bytes({4})}};
  const SafetensorsFile back = decode_safetensors(encode_safetensors(tensors, {}));
  ASSERT_EQ(back.tensors.size(), 5u);
  EXPECT_EQ(f32_values(back.at("a")), (std::vector<double>{1, 2}));
  EXPECT_EQ(f32_values(back.at("z")), std::vector<double>{});
  EXPECT_EQ(f32_values(back.at("m")), std::vector<double>{3});  // between two others
  EXPECT_EQ(back.at("b").shape, (Shape{2, 0}));
  EXPECT_EQ(f32_values(back.at("c")), std::vector<double>{4});
}

// A header written by hand (or damaged) that points outside the data, mixes
// up its sizes or is not what a safetensors header holds: DATA_CORRUPTION
// naming the tensor, never a crash or a tensor read from the wrong bytes.
TEST(Safetensors, RefusesHeadersThatDoNotDescribeTheData) {
  const auto file = [](const std::string& header, size_t data_bytes) {
    std::string out(8, '\0');
    for (size_t i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    return out + header + std::string(data_bytes, '\0');
  };
  const auto refusal = [](const std::string& damaged) {
    return refusal_of(StatusCode::kDataCorruption, [&] { decode_safetensors(damaged); });
  };
  const auto tensor = [](const std::string& fields) {
    return R"({"t": {"dtype": "F32", )" + fields + "}}";
  };
  EXPECT_EQ(refusal(file(tensor(R"("shape": [2], "data_offsets": [0, 8])"), 8)), "accepted");
  // Just the length (0): there is a header, empty, and it is not JSON.
  EXPECT_EQ(refusal(file("", 0)), "safetensors: the header is not a JSON object");
  // The header's length one byte past the end of the file.
  std::string past = file(tensor(R"("shape": [2], "data_offsets": [0, 8])"), 8);
  past[0] = static_cast<char>(past.size() - 8 + 1);
  EXPECT_NE(refusal(past).find("past the end"), std::string::npos) << refusal(past);
  const std::vector<std::pair<std::string, std::string>> damaged{
      {R"("shape": [2], "data_offsets": [0])", "data_offsets outside the data"},
      {R"("shape": [2], "data_offsets": [0, 8, 8])", "data_offsets outside the data"},
      {R"("shape": [2], "data_offsets": [8, 0])", "data_offsets outside the data"},
      {R"("shape": [2], "data_offsets": [16, 24])", "data_offsets outside the data"},
      {R"("shape": [2], "data_offsets": [-8, 0])", "data_offsets holds -8"},
      {R"("shape": [2], "data_offsets": [0.5, 8.5])", "data_offsets holds 0.5"},
      {R"("shape": [2], "data_offsets": "0-8")", "data_offsets is not a list"},
      {R"("shape": [3], "data_offsets": [0, 8])", "data_offsets disagree with dtype and shape"},
      {R"("shape": [2.9], "data_offsets": [0, 8])", "t: shape holds 2.9"},
      {R"("shape": [true, 2], "data_offsets": [0, 8])", "t: shape holds true"},
      {R"("shape": [-2], "data_offsets": [0, 8])", "t: shape holds -2"},
      {R"("shape": [9223372036854775808], "data_offsets": [0, 8])", "t: shape [-"},
      // (2^62 + 2) x 4 bytes wraps around to 8.
      {R"("shape": [4611686018427387906], "data_offsets": [0, 8])", "t: more than 2^63 - 1 bytes"},
      {R"("shape": [4611686018427387904, 4], "data_offsets": [0, 0])", "more elements than 2^63"},
      {R"("shape": 2, "data_offsets": [0, 8])", "t: shape is not a list"}};
  for (const auto& [fields, reason] : damaged) {
    const std::string why = refusal(file(tensor(fields), 8));
    EXPECT_NE(why.find(reason), std::string::npos) << fields << ": " << why;
  }
  EXPECT_NE(refusal(file(R"({"t": {"dtype": "F8", "shape": [2], "data_offsets": [0, 8]}})", 8))
                .find("unknown dtype 'F8'"),
            std::string::npos);
  EXPECT_NE(refusal(file(R"({"t": [1, 2]})", 8)).find("t: "), std::string::npos);
  EXPECT_NE(refusal(file(R"({"__metadata__": {"format": 1}})", 0)).find("__metadata__.format"),
            std::string::npos);
  // Two tensors over the same bytes, and a gap between two.
  EXPECT_NE(refusal(file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                            "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
                         8))
                .find("overlaps or leaves a gap at byte 4"),
            std::string::npos);
  EXPECT_NE(refusal(file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                            "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                         12))
                .find("overlaps or leaves a gap at byte 4"),
            std::string::npos);
}

// NumPy's .npy 1.0 layout: magic, version, little-endian header length,
// the header dict padded with spaces and a newline so the data starts at a
// multiple of 64 bytes (whatever the dict's length), then the doubles.
TEST(Npy, TheHeaderIsPaddedTo64BytesAndTheDataFollows) {
  const std::vector<double> values{1.5, -2, 3, 4, 5, 6.25};
  const std::string file = encode_npy_f64(values, 2, 3);
  ASSERT_EQ(file.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_length = static_cast<uint8_t>(file[8]) | static_cast<uint8_t>(file[9]) << 8;
  const std::string header = file.substr(10, header_length);
  EXPECT_EQ(header.find("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }"), 0u);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(header.find_first_not_of(' ', header.find('}') + 1), header.size() - 1);
  EXPECT_EQ((10 + header_length) % 64, 0u);
  ASSERT_EQ(file.size(), 10 + header_length + 8 * values.size());
  std::vector<double> data(values.size());
  std::memcpy(data.data(), file.data() + 10 + header_length, 8 * values.size());
  EXPECT_EQ(data, values);
  // Dicts of every length modulo 64 (the shape's digits): always aligned.
  int64_t rows = 1;
  for (int digits = 1; digits <= 18; ++digits, rows *= 10) {
    const std::string empty = encode_npy_f64({}, rows, 0);
    const size_t length = static_cast<uint8_t>(empty[8]) | static_cast<uint8_t>(empty[9]) << 8;
    EXPECT_EQ((10 + length) % 64, 0u) << rows;
    EXPECT_EQ(empty.size(), 10 + length) << rows;
    EXPECT_EQ(empty.back(), '\n') << rows;
  }
}

}  // namespace
}  // namespace polychip::training
