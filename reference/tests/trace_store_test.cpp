// TraceStore: write, read back bit-exactly, look up, replay; corruption is
// detected and named.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "reference/nvidia_reference.hpp"
#include "reference/trace_store.hpp"

namespace polychip::reference {
namespace {

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / fmt::format("polychip_trace_{}_{}.json", ::getpid(), name);
}

TraceStore sample_store() {
  TraceStore store({"NVIDIA H100 80GB HBM3 (sm_90)", "580.65.06", "13.0", "polychip cuda 0.1",
                    "2026-11-22T03:00:00Z"});
  TraceRecord gemm{{"gemm", DType::kF32, {2, 2, 3}, 7, "tf32"},
                   {{DType::kF32, {2, 2}, {1.5, -0.0, 0x1p-149, std::nextafter(1.0f, 2.0f)}}}};
  TraceRecord ln{{"layernorm", DType::kBF16, {1, 3}, 1, ""},
                 {{DType::kBF16, {1, 3}, {1.0078125, -INFINITY, std::nan("")}},
                  {DType::kF32, {1}, {0.1f}},
                  {DType::kF32, {1}, {3.0}}}};
  TraceRecord am{{"argmax", DType::kF16, {4}, 3, "special"}, {{DType::kI64, {1}, {3}}}};
  store.add(gemm);
  store.add(ln);
  store.add(am);
  return store;
}

TEST(TraceStoreTest, RoundTripIsBitExact) {
  TraceStore store = sample_store();
  fs::path path = temp_path("roundtrip");
  store.write(path);
  TraceStore back = TraceStore::read(path);
  fs::remove(path);
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back.provenance().device, "NVIDIA H100 80GB HBM3 (sm_90)");
  const TraceRecord* g = back.find({"gemm", DType::kF32, {2, 2, 3}, 7, "tf32"});
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->outputs[0].shape, (Shape{2, 2}));
  const auto& v = g->outputs[0].values;
  EXPECT_EQ(v[0], 1.5);
  EXPECT_TRUE(std::signbit(v[1]));
  EXPECT_EQ(v[2], 0x1p-149);
  EXPECT_EQ(v[3], static_cast<double>(std::nextafter(1.0f, 2.0f)));
  const TraceRecord* l = back.find({"layernorm", DType::kBF16, {1, 3}, 1, ""});
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->outputs[0].values[0], 1.0078125);
  EXPECT_EQ(l->outputs[0].values[1], -INFINITY);
  EXPECT_TRUE(std::isnan(l->outputs[0].values[2]));
  EXPECT_EQ(l->outputs[1].values[0], static_cast<double>(0.1f));
  EXPECT_EQ(back.find({"argmax", DType::kF16, {4}, 3, "special"})->outputs[0].values[0], 3);
  // Any part of the key differing misses.
  EXPECT_EQ(back.find({"gemm", DType::kF32, {2, 2, 3}, 8, "tf32"}), nullptr);
  EXPECT_EQ(back.find({"gemm", DType::kF32, {2, 2, 3}, 7, ""}), nullptr);
  EXPECT_EQ(back.find({"gemm", DType::kF16, {2, 2, 3}, 7, "tf32"}), nullptr);
}

TEST(TraceStoreTest, KeyStringFollowsCaseIdLayout) {
  EXPECT_EQ((TraceKey{"gemm", DType::kF32, {64, 64, 64}, 7, "tf32"}).to_string(),
            "gemm/f32/64x64x64/tf32/seed=7");
  EXPECT_EQ((TraceKey{"exp", DType::kBF16, {1000}, 3, ""}).to_string(), "exp/bf16/1000/seed=3");
}

TEST(TraceStoreTest, AddReplacesSameKey) {
  TraceStore store;
  store.add({{"exp", DType::kF32, {1}, 1, ""}, {{DType::kF32, {1}, {1}}}});
  store.add({{"exp", DType::kF32, {1}, 1, ""}, {{DType::kF32, {1}, {2}}}});
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ(store.find({"exp", DType::kF32, {1}, 1, ""})->outputs[0].values[0], 2);
  EXPECT_THROW(store.add({{"exp", DType::kF32, {2}, 1, ""}, {{DType::kF32, {2}, {1}}}}), Error);
}

TEST(TraceStoreTest, CorruptionIsDetectedAndNamed) {
  fs::path path = temp_path("corrupt");
  sample_store().write(path);
  std::string text;
  {
    std::ifstream f(path);
    text.assign(std::istreambuf_iterator<char>(f), {});
  }
  // Flip one base64 character of the first output's data.
  size_t at = text.find("\"data\": \"") + 9;
  text[at] = text[at] == 'A' ? 'B' : 'A';
  {
    std::ofstream f(path, std::ios::trunc);
    f << text;
  }
  try {
    TraceStore::read(path);
    FAIL() << "expected DATA_CORRUPTION";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDataCorruption);
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  {
    std::ofstream f(path, std::ios::trunc);
    f << "{\"schema\": \"something/else\"}";
  }
  EXPECT_THROW(TraceStore::read(path), Error);
  {
    std::ofstream f(path, std::ios::trunc);
    f << "{ not json";
  }
  EXPECT_THROW(TraceStore::read(path), Error);
  fs::remove(path);
  try {
    TraceStore::read(path);
    FAIL() << "expected NOT_FOUND";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kNotFound);
  }
}

// exp/f32/2/seed=1 as a trace file holds it.
nlohmann::json exp_record() {
  return trace_record_to_json({{"exp", DType::kF32, {2}, 1, ""}, {{DType::kF32, {2}, {1, 2}}}});
}

// What reading `record` as "record 4" refuses it with (DATA_CORRUPTION), or
// "no error".
std::string error_of(const nlohmann::json& record) {
  try {
    trace_record_from_json(record, "record 4");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDataCorruption) << e.what();
    return e.message();
  }
  return "no error";
}

// A record's errors name the record once, whatever raised them: an unknown
// dtype (INVALID_ARGUMENT from the dtype parser) and a checksum mismatch.
TEST(TraceStoreTest, ARecordsErrorsNameTheRecordOnce) {
  const nlohmann::json good = exp_record();
  nlohmann::json unknown_dtype = good;
  unknown_dtype["outputs"][0]["dtype"] = "f33";
  std::string m = error_of(unknown_dtype);
  EXPECT_EQ(m.rfind("record 4 (exp/f32/2/seed=1): ", 0), 0u) << m;
  EXPECT_NE(m.find("f33"), std::string::npos) << m;
  nlohmann::json bad_sum = good;
  bad_sum["outputs"][0]["fnv1a64"] = "0000000000000000";
  EXPECT_EQ(error_of(bad_sum), "record 4 (exp/f32/2/seed=1) output 0: checksum mismatch");
  EXPECT_EQ(trace_record_from_json(good, "record 4").outputs[0].values,
            (std::vector<double>{1, 2}));
}

// What a hand-edited or damaged record may say, refused naming the record:
// no such op, an output missing, an id that is not its key's, a negative
// seed (read as 2^64 - 1), a negative dimension, a shape whose product
// wraps (2^62 x 4 elements made 0 and matched none).
TEST(TraceStoreTest, RecordsThatCannotBeTheirCasesAreRefused) {
  const struct {
    std::function<void(nlohmann::json&)> damage;
    const char* message;
  } cases[] = {
      {[](nlohmann::json& r) { r["key"]["op"] = "nope"; },
       "record 4 (nope/f32/2/seed=1): 'nope' is not an op of the contract"},
      {[](nlohmann::json& r) { r["outputs"] = nlohmann::json::array(); },
       "record 4 (exp/f32/2/seed=1): 0 outputs recorded; exp has 1"},
      {[](nlohmann::json& r) { r["id"] = "exp/f32/2/seed=2"; },
       "record 4 (exp/f32/2/seed=1): its id 'exp/f32/2/seed=2' is not its key's"},
      {[](nlohmann::json& r) { r["key"]["seed"] = -1; },
       "record 4: the seed -1 is not a whole number >= 0"},
      {[](nlohmann::json& r) { r["outputs"][0]["shape"] = {-2}; },
       "record 4 (exp/f32/2/seed=1) output 0: shape [-2] has a negative dimension"},
      {[](nlohmann::json& r) {
         r["outputs"][0]["shape"] = {int64_t{1} << 62, 4};
       },
       "record 4 (exp/f32/2/seed=1) output 0: shape [4611686018427387904, 4] has more "
       "elements than 2^63 - 1"},
  };
  for (const auto& c : cases) {
    nlohmann::json record = exp_record();
    c.damage(record);
    EXPECT_EQ(error_of(record), c.message);
  }
  // An empty output is no damage.
  const nlohmann::json empty =
      trace_record_to_json({{"relu", DType::kF32, {2, 0}, 1, ""}, {{DType::kF32, {2, 0}, {}}}});
  EXPECT_EQ(trace_record_from_json(empty, "record 0").outputs[0].values.size(), 0u);
}

// Two records of one case: which one a certification took would depend on
// their order.
TEST(TraceStoreTest, AFileWithTwoRecordsOfOneCaseIsRefused) {
  TraceStore store({"d", "1", "2", "s", "t"});
  store.add({{"exp", DType::kF32, {2}, 1, ""}, {{DType::kF32, {2}, {1, 2}}}});
  const fs::path path = fs::temp_directory_path() / "polychip_trace_twice.json";
  store.write(path);
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(path));
  doc["records"].push_back(doc["records"][0]);
  std::ofstream(path, std::ios::trunc) << doc.dump();
  try {
    TraceStore::read(path);
    ADD_FAILURE() << "read a file with a case twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDataCorruption);
    EXPECT_NE(e.message().find(path.string() + ": record 1 repeats case exp/f32/2/seed=1"),
              std::string::npos)
        << e.message();
  }
  fs::remove(path);
}

TEST(TraceStoreTest, RecordedOutputsReplaceTheEmulation) {
  const OpSpec& op = *find_op("exp");
  polychip_op_attrs attrs = default_attrs(op);
  std::vector<HostTensor> in = {{DType::kF32, {2}, {0, 1}}};
  std::vector<HostTensor> out = {{DType::kF32, {2}, {}}};
  TraceKey key{"exp", DType::kF32, {2}, 5, ""};
  std::string provenance = nvidia_reference_run_or_replay(nullptr, key, op, in, out, attrs);
  EXPECT_EQ(provenance, kEmulatedProvenance);
  EXPECT_EQ(out[0].values[1], static_cast<double>(static_cast<float>(std::exp(1.0))));

  TraceStore store({"NVIDIA A100-SXM4-80GB", "550.54", "12.4", "polychip cuda 0.1", "2026-11-22"});
  store.add({key, {{DType::kF32, {2}, {1, 2.75}}}});
  provenance = nvidia_reference_run_or_replay(&store, key, op, in, out, attrs);
  EXPECT_NE(provenance.find("recorded on NVIDIA A100-SXM4-80GB"), std::string::npos);
  EXPECT_EQ(out[0].values, (std::vector<double>{1, 2.75}));
  // A record whose outputs do not fit the call is corruption, not a result.
  store.add({key, {{DType::kF16, {2}, {1, 2.75}}}});
  EXPECT_THROW(nvidia_reference_run_or_replay(&store, key, op, in, out, attrs), Error);
}

}  // namespace
}  // namespace polychip::reference
