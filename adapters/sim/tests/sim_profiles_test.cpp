// Each sim device type: faithful numerics match the cpu adapter bit for
// bit; each defective (or drifting) profile differs from the cpu on the ops
// its defect touches and matches it bit for bit everywhere else;
// sim.nvidia_emu matches the NVIDIA emulation of reference/ bit for bit,
// whatever the views' strides.
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "random_values.hpp"
#include "reference/nvidia_reference.hpp"
#include "sim_profiles.hpp"
#include "sim_test_util.hpp"

namespace polychip::testing {
namespace {

// One op case: inputs (dtype, shape, values), output shapes, attributes.
struct Case {
  std::string name;  // what the defect profiles list
  std::string op;
  std::vector<std::tuple<DType, Shape, std::vector<double>>> inputs;
  std::vector<std::pair<DType, Shape>> outputs;
  std::function<void(polychip_op_attrs&)> set_attrs;
};

// Runs `c` on `run` and returns every output's values, concatenated.
std::vector<double> run_case(OpRunner& run, const Case& c) {
  std::vector<Tensor> tensors;
  for (const auto& [dt, shape, values] : c.inputs) tensors.push_back(run.make(dt, shape, values));
  for (const auto& [dt, shape] : c.outputs) tensors.push_back(run.empty(dt, shape));
  auto a = run.attrs(c.op);
  if (c.set_attrs) c.set_attrs(a);
  std::vector<TensorView> views(tensors.begin(), tensors.end());
  run.device().runtime().dispatcher().call(c.op, views, a, Stream(run.device()));
  std::vector<double> out;
  for (size_t k = c.inputs.size(); k < tensors.size(); ++k) {
    auto v = run.values(tensors[k]);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

// Cases that expose each defect, and ordinary ops none of them touch.
std::vector<Case> cases() {
  const DType f32 = DType::kF32;
  std::vector<Case> cs;
  cs.push_back({"gemm",
                "gemm",
                {{f32, {16, 64}, random_values(1024, 1)},
                 {f32, {64, 8}, random_values(512, 2)},
                 {f32, {16, 8}, std::vector<double>(128, 0)}},
                {{f32, {16, 8}}},
                nullptr});
  // exp with results down to the f32 subnormal range; log of subnormals.
  std::vector<double> ex = random_values(64, 3);
  ex.push_back(-100);
  ex.push_back(-88);
  cs.push_back({"exp", "exp", {{f32, {66}, ex}}, {{f32, {66}}}, nullptr});
  std::vector<double> lx = random_values(62, 4, 5, 1);
  for (auto& v : lx) v = std::fabs(v);
  lx.push_back(1e-40);
  lx.push_back(3e-39);
  cs.push_back({"log", "log", {{f32, {64}, lx}}, {{f32, {64}}}, nullptr});
  std::vector<double> sx = random_values(32, 5, 0, 3);
  sx[3] = 95;  // overflows exp in f32 without max subtraction
  cs.push_back({"softmax", "softmax", {{f32, {4, 8}, sx}}, {{f32, {4, 8}}}, nullptr});
  cs.push_back({"log_softmax", "log_softmax", {{f32, {4, 8}, sx}}, {{f32, {4, 8}}}, nullptr});
  cs.push_back({"layernorm",
                "layernorm",
                {{f32, {4, 64}, random_values(256, 6, 3000, 1)},
                 {f32, {64}, std::vector<double>(64, 1)},
                 {f32, {64}, std::vector<double>(64, 0)}},
                {{f32, {4, 64}}, {f32, {4}}, {f32, {4}}},
                nullptr});
  // A weight gradient dW = X^T dY over 256 tokens (sim.drift's gemms).
  cs.push_back({"gemm_weight_gradient",
                "gemm",
                {{f32, {256, 8}, random_values(2048, 18)},
                 {f32, {256, 4}, random_values(1024, 19)},
                 {f32, {8, 4}, std::vector<double>(32, 0)}},
                {{f32, {8, 4}}},
                [](polychip_op_attrs& a) { a.ints[attr::kTransA] = 1; }});
  // Kernel defects: a 63-element tail, a row longer than 4096, a
  // non-default eps, repeated ids.
  cs.push_back({"tanh", "tanh", {{f32, {63}, random_values(63, 14)}}, {{f32, {63}}}, nullptr});
  cs.push_back({"softmax_long_row",
                "softmax",
                {{f32, {1, 4097}, random_values(4097, 15)}},
                {{f32, {1, 4097}}},
                nullptr});
  cs.push_back({"rmsnorm_eps",
                "rmsnorm",
                {{f32, {4, 64}, random_values(256, 16)}, {f32, {64}, std::vector<double>(64, 1)}},
                {{f32, {4, 64}}, {f32, {4}}},
                [](polychip_op_attrs& a) { a.floats[attr::kEps] = 0.5; }});
  cs.push_back({"embedding_backward",
                "embedding_backward",
                {{DType::kI64, {6}, {0, 3, 0, 2, 3, 0}}, {f32, {6, 4}, random_values(24, 17)}},
                {{f32, {4, 4}}},
                nullptr});
  // Ops no defect touches.
  cs.push_back(
      {"sigmoid", "sigmoid", {{f32, {40}, random_values(40, 7, 0, 4)}}, {{f32, {40}}}, nullptr});
  cs.push_back(
      {"rmsnorm",
       "rmsnorm",
       {{f32, {4, 64}, random_values(256, 8, 3000, 1)}, {f32, {64}, std::vector<double>(64, 1)}},
       {{f32, {4, 64}}, {f32, {4}}},
       nullptr});
  cs.push_back({"cross_entropy",
                "cross_entropy",
                {{f32, {3, 5}, random_values(15, 9, 0, 30)}, {DType::kI64, {3}, {0, 4, 2}}},
                {{f32, {3}}},
                nullptr});
  cs.push_back({"attention",
                "attention",
                {{f32, {1, 2, 4, 8}, random_values(64, 10)},
                 {f32, {1, 2, 4, 8}, random_values(64, 11)},
                 {f32, {1, 2, 4, 8}, random_values(64, 12)}},
                {{f32, {1, 2, 4, 8}}, {f32, {1, 2, 4}}},
                nullptr});
  cs.push_back({"reduce_sum",
                "reduce_sum",
                {{f32, {8, 16}, random_values(128, 13)}},
                {{f32, {8, 1}}},
                nullptr});
  return cs;
}

// Which case names each profile's defect must change.
const std::map<std::string, std::set<std::string>> kAffected = {
    {"sim.faithful", {}},
    {"sim.bf16acc", {"gemm", "gemm_weight_gradient"}},
    {"sim.ftz", {"exp", "log"}},
    {"sim.naive_softmax", {"softmax", "log_softmax", "softmax_long_row"}},
    {"sim.poor_variance", {"layernorm"}},
    // Writes outside the output only: the output's values are the cpu's.
    {"sim.write_past_end", {}},
    // The first call of the process (this one) is the one-ulp-off call.
    {"sim.nondeterministic", {"reduce_sum"}},
    {"sim.vector_tail", {"tanh"}},
    {"sim.long_row", {"softmax_long_row"}},
    {"sim.ignored_eps", {"rmsnorm_eps"}},
    {"sim.lost_updates", {"embedding_backward"}},
    // Their layouts (stride 0, gaps) are the certify suite's: contiguous here.
    {"sim.broadcast_as_contiguous", {}},
    {"sim.strides_ignored", {}},
    // Its copies to the host corrupt outputs over 4 KiB that are not whole pages.
    {"sim.copy_tail", {"softmax_long_row"}},
    {"sim.drift", {"gemm_weight_gradient"}},
    // Its uploads to a destination off a 64-byte line write before it:
    // tensors here start on a line.
    {"sim.copy_head", {}},
    // Every f32 row op: the norms, the softmax family, cross-entropy, sums.
    {"sim.f16_rows",
     {"softmax", "log_softmax", "layernorm", "softmax_long_row", "rmsnorm_eps", "rmsnorm",
      "cross_entropy", "reduce_sum"}},
};
// Not the cpu's numerics: compared with the NVIDIA emulation instead.
const char* const kNvidiaEmulation = "sim.nvidia_emu";

TEST_F(SimTest, OneDevicePerProfileWithItsDeviceType) {
  std::set<std::string> types;
  for (const Device& d : rt.devices())
    if (std::string(d.adapter_name()) == "sim") {
      types.insert(d.device_type());
      EXPECT_FALSE(d.properties().has(POLYCHIP_CAP_HOST_VISIBLE_MEMORY));
      EXPECT_TRUE(d.properties().has(POLYCHIP_CAP_TIMING_EVENTS));
      EXPECT_TRUE(d.properties().supports(DType::kBF16));
    }
  std::set<std::string> want = {kNvidiaEmulation};
  for (const auto& [type, ops] : kAffected) want.insert(type);
  EXPECT_EQ(types, want);
  EXPECT_EQ(sim::sim_profiles().size(), want.size());
}

// The defect corpus (conformance/data/sim_defects.json) expects the quick
// level to fail each profile it lists: only defective ones; the faithful,
// reference and drifting profiles pass it.
TEST(SimProfiles, TheDefectCorpusListsOnlyDefectiveProfiles) {
  std::ifstream file(SIM_DEFECTS_FILE);
  ASSERT_TRUE(file) << SIM_DEFECTS_FILE;
  const auto corpus = nlohmann::json::parse(file);
  std::map<std::string, sim::ProfileRole> roles;
  for (const sim::SimProfile& p : sim::sim_profiles()) {
    roles[p.device_type] = p.role;
    // The NVIDIA emulation runs exactly on the reference profile.
    EXPECT_EQ(p.engine == sim::KernelEngine::kNvidiaEmulation,
              p.role == sim::ProfileRole::kReference)
        << p.device_type;
  }
  for (const auto& [type, ops] : corpus["defects"].items()) {
    ASSERT_TRUE(roles.count(type)) << type << " is not a sim profile";
    EXPECT_EQ(roles[type], sim::ProfileRole::kDefective) << type;
  }
  for (const auto& type : corpus["must_pass"]) {
    const auto role = roles.find(type.get<std::string>());  // "cpu" is no sim profile
    if (role != roles.end()) {
      EXPECT_NE(role->second, sim::ProfileRole::kDefective) << type;
    }
  }
  for (const char* type : {"sim.nvidia_emu", "sim.drift"})
    EXPECT_FALSE(corpus["defects"].contains(type)) << type;
}

TEST_F(SimTest, EachProfileDiffersFromTheCpuExactlyOnTheOpsItsDefectTouches) {
  const auto all = cases();
  std::vector<std::vector<double>> reference;
  for (const auto& c : all) reference.push_back(run_case(cpu, c));
  for (const auto& [type, affected] : kAffected) {
    OpRunner sim = runner(type.c_str());
    for (size_t k = 0; k < all.size(); ++k) {
      // Twice: sim.nondeterministic is off on every other call, counted
      // across the process (so across --gtest_repeat runs too).
      const bool same = same_values(run_case(sim, all[k]), reference[k]) &&
                        same_values(run_case(sim, all[k]), reference[k]);
      EXPECT_EQ(!same, affected.count(all[k].name) == 1)
          << type << " on " << all[k].name << (same ? " matches" : " differs from") << " the cpu";
    }
  }
}

// The inputs and output shapes of `c` as host tensors, run through the
// NVIDIA emulation.
std::vector<double> run_emulation(const Case& c) {
  std::vector<precision::HostTensor> in, out;
  for (const auto& [dt, shape, values] : c.inputs) in.push_back({dt, shape, values});
  for (const auto& [dt, shape] : c.outputs) out.push_back({dt, shape, {}});
  const OpSpec& op = *find_op(c.op);
  polychip_op_attrs a = default_attrs(op);
  if (c.set_attrs) c.set_attrs(a);
  reference::nvidia_reference_run(op, in, out, a);
  std::vector<double> values;
  for (const auto& t : out) values.insert(values.end(), t.values.begin(), t.values.end());
  return values;
}

TEST_F(SimTest, NvidiaEmulationDeviceComputesWhatTheEmulationComputes) {
  OpRunner emu = runner(kNvidiaEmulation);
  EXPECT_NE(emu.device().properties().name.find("emulated"), std::string::npos);
  const auto all = cases();
  for (const auto& c : all) EXPECT_TRUE(same_values(run_case(emu, c), run_emulation(c))) << c.name;
  // Where the emulation and the cpu differ (FMA-ordered gemm vs blocked
  // sgemm), the device is the emulation, not the cpu.
  const Case& gemm = all[0];
  EXPECT_FALSE(same_values(run_case(cpu, gemm), run_case(emu, gemm)));
}

TEST_F(SimTest, NvidiaEmulationDeviceReadsBroadcastAndPermutedViews) {
  OpRunner emu = runner(kNvidiaEmulation);
  // x [3, 4] (x) b broadcast along rows (stride 0), into a transposed output.
  const std::vector<double> xv = random_values(12, 30), bv = random_values(4, 31);
  auto x = emu.make(DType::kF32, {3, 4}, xv);
  auto b = emu.make(DType::kF32, {4}, bv);
  auto y = emu.empty(DType::kF32, {4, 3});
  const TensorView b_rows(b.buffer(), DType::kF32, {3, 4}, {0, 1}, 0);
  const TensorView y_t(y.buffer(), DType::kF32, {3, 4}, {1, 3}, 0);
  emu.call("mul", {x, b_rows, y_t});
  const auto got = emu.values(y);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(got[j * 3 + i],
                static_cast<double>(static_cast<float>(xv[i * 4 + j]) * static_cast<float>(bv[j])))
          << i << "," << j;
}

TEST_F(SimTest, DefectsShowTheirSignatures) {
  // naive softmax: exp(95) overflows f32 -> NaN in the row; cpu stays finite.
  OpRunner naive = runner("sim.naive_softmax");
  auto x = naive.make(DType::kF32, {2}, {95, 0});
  auto y = naive.empty(DType::kF32, {2});
  naive.call("softmax", {x, y});
  EXPECT_TRUE(std::isnan(naive.values(y)[0]));
  // ftz: exp(-100) is subnormal in f32 -> 0; log(1e-40) -> -Inf.
  OpRunner ftz = runner("sim.ftz");
  auto e = ftz.make(DType::kF32, {2}, {-100, 1e-40});
  auto r = ftz.empty(DType::kF32, {2});
  ftz.call("exp", {e, r});
  EXPECT_EQ(ftz.values(r)[0], 0.0);
  ftz.call("log", {e, r});
  EXPECT_EQ(ftz.values(r)[1], -INFINITY);
  // poor variance: mean 1e4, sd 1: rstd far from 1.
  OpRunner poor = runner("sim.poor_variance");
  auto lx = poor.make(DType::kF32, {1, 256}, random_values(256, 20, 1e4, 1));
  auto g = poor.make(DType::kF32, {256}, std::vector<double>(256, 1));
  auto b = poor.make(DType::kF32, {256}, std::vector<double>(256, 0));
  auto ly = poor.empty(DType::kF32, {1, 256}), m = poor.empty(DType::kF32, {1}),
       rs = poor.empty(DType::kF32, {1});
  poor.call("layernorm", {lx, g, b, ly, m, rs});
  EXPECT_GT(std::fabs(poor.values(rs)[0] - 1.0), 0.1);
  // bf16 accumulation: 256 ones + 1 each: 257 is not a bf16 number.
  OpRunner acc = runner("sim.bf16acc");
  auto a1 = acc.make(DType::kF32, {1, 512}, std::vector<double>(512, 1.0));
  auto b1 = acc.make(DType::kF32, {512, 1}, std::vector<double>(512, 1.0));
  auto c1 = acc.make(DType::kF32, {1, 1}, {0});
  auto y1 = acc.empty(DType::kF32, {1, 1});
  acc.call("gemm", {a1, b1, c1, y1});
  EXPECT_EQ(acc.values(y1)[0], 256.0);  // stuck: 256 + 1 rounds back to 256 in bf16
}

}  // namespace
}  // namespace polychip::testing
