// Mutation testing of the precision suite: every listed misreading of every
// op (misreadings.hpp), patched onto the cpu adapter, must fail quick in
// every dtype where it applies; and the registry's factors are what catch
// them: with one factor taken out of an op's entry, a mutant survives.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "polychip/hal.hpp"
#include "precision/harness/case_list.hpp"
#include "precision/mutants/mutant_hunt.hpp"
#include "precision/mutants/mutant_kernel.hpp"
#include "precision/oracle/oracle.hpp"
#include "reference/nvidia_reference.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);

namespace polychip::precision {
namespace {

RuntimeOptions cpu_only() {
  RuntimeOptions o;
  o.builtin_adapters = {&polychip_cpu_adapter_get_api};
  return o;
}

class MutantChipTest : public ::testing::Test {
 protected:
  MutantChipTest() : runtime_(cpu_only()), device_(runtime_.device("cpu")), stream_(device_) {
    // As certify judges a device: the oracle, the NVIDIA emulation, the
    // built-in tolerances and waivers.
    ctx_.device = device_;
    ctx_.dispatcher = &runtime_.dispatcher();
    ctx_.stream = &stream_;
    ctx_.references.oracle = kOracle;
    ctx_.references.nvidia = reference::kNvidiaReference;
    ctx_.tolerances = &ToleranceTable::builtin();
    ctx_.waivers = &WaiverList::builtin();
    ctx_.adapter = "cpu";
    ctx_.repro_prefix = "mutant ";
  }

  Runtime runtime_;
  Device device_;
  Stream stream_;
  CaseContext ctx_;
};

// The holes quick has today: each mutant that survives, with the dtypes it
// survives in (docs/precision-suite.md, "Mutant chips", says why each
// family survives). The suite gains by emptying this list; a mutant that
// starts surviving, or a hole that closes, fails the test until the list
// says so.
const std::set<std::string> kSurvivingAtQuick = {
    "argmax: indices held in 16 bits in f64, f16",
    "argmax: lines longer than 4,096 at the next lower precision in f64, f32, f16, bf16",
    "argmax: subnormal inputs and outputs flushed to zero in f64, f32, f16, bf16",
    "attention_backward: outputs rounded to the next lower precision in f16, bf16",
    "cross_entropy: indices held in 16 bits in f64, bf16",
    "cross_entropy: lines longer than 4,096 at the next lower precision in bf16",
    "cross_entropy_backward: indices held in 16 bits in f64, bf16",
    "embedding: indices held in 16 bits in f16",
    "embedding_backward: indices held in 16 bits in f64, f32, f16",
    "fill: NaN results written as zero in f32, f16, bf16",
    "fill: subnormal inputs and outputs flushed to zero in f64, f32, f16, bf16",
    "gemm: alpha ignored (its default 1 used) in f16",
    "gemm: beta ignored (its default 0 used) in f16",
    "gemm: math_mode ignored (its default 0 used) in f64, f32, f16, bf16",
    "gemm: subnormal inputs and outputs flushed to zero in f64, f32, f16, bf16",
    "l2_norm: lines longer than 4,096 at the next lower precision in f16, bf16",
    "l2_norm: subnormal inputs and outputs flushed to zero in f64, f32, f16, bf16",
    "layernorm: lines longer than 4,096 at the next lower precision in f64",
    "log_softmax: subnormal inputs and outputs flushed to zero in f64, f32, f16, bf16",
    "log_softmax_backward: subnormal inputs and outputs flushed to zero in f64, f32, f16, bf16",
    "mul: subnormal inputs and outputs flushed to zero in bf16",
    "reduce_max: subnormal inputs and outputs flushed to zero in f32, bf16",
    "reduce_mean: lines longer than 4,096 at the next lower precision in f16",
    "reduce_mean: subnormal inputs and outputs flushed to zero in f64, f32, f16, bf16",
    "reduce_sum: lines longer than 4,096 at the next lower precision in bf16",
    "reduce_sum: subnormal inputs and outputs flushed to zero in f64, f32, f16, bf16",
    "relu_backward: the last element of a length off a multiple of 32 left zero in bf16",
    "sigmoid: subnormal inputs and outputs flushed to zero in f64, f32, bf16",
    "softmax: subnormal inputs and outputs flushed to zero in f64, f32, bf16",
    "softmax_backward: subnormal inputs and outputs flushed to zero in f64, f32, bf16",
    "sub: subnormal inputs and outputs flushed to zero in bf16",
};

std::string dtype_list(const std::vector<DType>& dtypes) {
  std::vector<std::string_view> names;
  for (DType d : dtypes) names.push_back(dtype_name(d));
  return fmt::format("{}", fmt::join(names, ", "));
}

TEST_F(MutantChipTest, EveryMisreadingOfEveryOpFailsQuickInEveryDtypeItApplies) {
  const std::vector<CaseSpec> quick = cases_for_level(Level::kQuick);
  const std::vector<Mutant> mutants = all_mutants();
  size_t killed = 0, pairs = 0, caught_pairs = 0;
  std::map<std::string, std::pair<size_t, size_t>> per_op;  // op -> (killed, all)
  std::set<std::string> surviving;
  for (const Mutant& m : mutants) {
    const MutantOutcome out = hunt_mutant(m, quick, ctx_);
    pairs += m.dtypes.size();
    caught_pairs += out.caught.size();
    killed += out.killed();
    auto& [k, n] = per_op[m.op];
    k += out.killed();
    ++n;
    if (!out.killed()) surviving.insert(m.name() + " in " + dtype_list(out.survived));
  }
  for (const std::string& s : surviving)
    EXPECT_TRUE(kSurvivingAtQuick.count(s)) << "a new hole: " << s;
  for (const std::string& s : kSurvivingAtQuick)
    EXPECT_TRUE(surviving.count(s)) << "caught now (take it off the list): " << s;
  EXPECT_EQ(killed, mutants.size() - kSurvivingAtQuick.size());
  std::string table;
  for (const auto& [op, kn] : per_op)
    table += fmt::format("  {:<24} {} of {}\n", op, kn.first, kn.second);
  std::printf("caught %zu of %zu mutants (%zu of %zu mutant x dtype pairs) at quick\n%s", killed,
              mutants.size(), caught_pairs, pairs, table.c_str());
}

// The registry's factors are what catch the mutants: without mul's layout
// factor its crossed cases hold no broadcast, and a mul that reads a
// broadcast operand as dense passes quick in the dtypes only the crossed
// cases reach it in, while the full entry catches it in every one.
TEST_F(MutantChipTest, TakingAFactorOutOfAnEntryLetsAMutantSurvive) {
  const OpFactors& mul = *find_op_factors("mul");
  OpFactors without_layout = mul;
  std::erase_if(without_layout.factors, [](const Factor& f) { return f.name == "layout"; });
  std::erase_if(without_layout.forbidden, [](const ForbiddenPair& p) {
    return p.factor_a == "layout" || p.factor_b == "layout";
  });
  std::vector<CaseSpec> cases;
  for (const CaseSpec& spec : cases_for_level(Level::kQuick))
    if (spec.op == "mul" && spec.seed < kFirstCrossedSeed) cases.push_back(spec);
  const size_t listed = cases.size();
  for (CaseSpec& spec : crossed_cases(without_layout, crossing_strength(Level::kQuick)))
    cases.push_back(std::move(spec));
  std::vector<CaseSpec> full(cases.begin(), cases.begin() + static_cast<std::ptrdiff_t>(listed));
  for (CaseSpec& spec : crossed_cases(mul, crossing_strength(Level::kQuick)))
    full.push_back(std::move(spec));

  const std::vector<Mutant> mutants = mutants_of(mul);
  const auto broadcast = std::find_if(mutants.begin(), mutants.end(), [](const Mutant& m) {
    return m.misreading == Misreading::kBroadcastReadAsContiguous;
  });
  ASSERT_NE(broadcast, mutants.end());
  EXPECT_TRUE(hunt_mutant(*broadcast, full, ctx_).killed());
  const MutantOutcome out = hunt_mutant(*broadcast, cases, ctx_);
  EXPECT_FALSE(out.killed()) << "the listed cases alone catch it in every dtype";
  std::printf("without mul's layout factor, '%s' survives quick in %s\n", broadcast->name().c_str(),
              dtype_list(out.survived).c_str());
}

}  // namespace
}  // namespace polychip::precision
