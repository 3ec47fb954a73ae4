// Exhaustive f32 cases (exhaustive_unary.hpp) on sub-ranges of the 2^32
// inputs: the cpu adapter passes every op; sim.ftz's exp/log, a kernel wrong
// at a single input that the sampled cases miss, a write past the output
// and errors that only the long double oracle can judge are all told apart.
#include "exhaustive_unary.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <iterator>
#include <map>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "case_list.hpp"
#include "kernel_test_support.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);
extern "C" const polychip_adapter_api* polychip_sim_adapter_get_api(void);

namespace polychip::precision {
namespace {

using test::host_f32;
// Elements of the (contiguous) input, whatever its rank.
int64_t length(const polychip_kernel_args* a) {
  int64_t n = 1;
  for (int32_t d = 0; d < a->tensors[0].rank; ++d) n *= a->tensors[0].shape[d];
  return n;
}
float add_ulps(float v, int32_t ulps) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(v) + static_cast<uint32_t>(ulps));
}

// exp, correctly rounded except at one input: 1.4142135 (0x3fb504f3),
// where it is 16 ulp high. Among 2^32 inputs, sampling will not find it.
constexpr uint32_t kBadInput = 0x3fb504f3;
polychip_status exp_wrong_at_one_input(const polychip_kernel_args* a) {
  const float* x = host_f32(a, 0);
  float* y = host_f32(a, 1);
  for (int64_t i = 0; i < length(a); ++i) {
    y[i] = static_cast<float>(std::exp(double{x[i]}));
    if (std::bit_cast<uint32_t>(x[i]) == kBadInput) y[i] = add_ulps(y[i], 16);
  }
  return POLYCHIP_OK;
}
// Correct values, plus one element written past the output.
polychip_status exp_writing_past_the_end(const polychip_kernel_args* a) {
  const float* x = host_f32(a, 0);
  float* y = host_f32(a, 1);
  for (int64_t i = 0; i <= length(a); ++i) y[i] = i < length(a) ? std::exp(x[i]) : 0.0f;
  return POLYCHIP_OK;
}
// rsqrt, correctly rounded except `kUlps` ulp high where the result is a
// power of two (x = 4^k): there the float64 check cannot tell which
// binade's ulp applies, so only the oracle decides. 2 ulps is 0.8 of the
// bound (2 + 0.5), 3 ulps is 1.2.
template <int32_t kUlps>
polychip_status rsqrt_high_at_powers_of_two(const polychip_kernel_args* a) {
  const float* x = host_f32(a, 0);
  float* y = host_f32(a, 1);
  for (int64_t i = 0; i < length(a); ++i) {
    y[i] = static_cast<float>(1 / std::sqrt(double{x[i]}));
    int e = 0;
    if (std::isfinite(y[i]) && std::frexp(y[i], &e) == 0.5f) y[i] = add_ulps(y[i], kUlps);
  }
  return POLYCHIP_OK;
}

// Correct values, plus one element written just before the output.
polychip_status exp_writing_before_the_start(const polychip_kernel_args* a) {
  const float* x = host_f32(a, 0);
  float* y = host_f32(a, 1);
  for (int64_t i = 0; i < length(a); ++i) y[i] = std::exp(x[i]);
  y[-1] = 0.0f;
  return POLYCHIP_OK;
}
// Correct values, but the input is overwritten at element 3.
polychip_status exp_modifying_its_input(const polychip_kernel_args* a) {
  float* x = host_f32(a, 0);
  float* y = host_f32(a, 1);
  for (int64_t i = 0; i < length(a); ++i) y[i] = std::exp(x[i]);
  x[3] = 0.0f;
  return POLYCHIP_OK;
}
// Wrong at every input: +Inf.
polychip_status exp_always_inf(const polychip_kernel_args* a) {
  float* y = host_f32(a, 1);
  for (int64_t i = 0; i < length(a); ++i) y[i] = INFINITY;
  return POLYCHIP_OK;
}
template <polychip_status kStatus>
polychip_status exp_returning(const polychip_kernel_args*) {
  return kStatus;
}

double exp_of(double x) { return std::exp(x); }
double sqrt_of(double x) { return std::sqrt(x); }
// `kFn`, correctly rounded, then moved `kUlps` ulps.
template <double (*kFn)(double), int32_t kUlps>
polychip_status off_by(const polychip_kernel_args* a) {
  const float* x = host_f32(a, 0);
  float* y = host_f32(a, 1);
  for (int64_t i = 0; i < length(a); ++i)
    y[i] = add_ulps(static_cast<float>(kFn(double{x[i]})), kUlps);
  return POLYCHIP_OK;
}

// exp, correctly rounded, counting its calls.
int exp_calls = 0;
polychip_status counted_exp(const polychip_kernel_args* a) {
  ++exp_calls;
  return off_by<exp_of, 0>(a);
}

// The cpu adapter named "noexp", without its exp kernels: a device that
// takes f32 but has no kernel for one op.
polychip_status kernel_table_without_exp(polychip_kernel_table_args* args) {
  const polychip_status st = polychip_cpu_adapter_get_api()->kernel_table(args);
  if (st != POLYCHIP_OK) return st;
  static const std::vector<polychip_kernel_entry> kept = [args] {
    std::vector<polychip_kernel_entry> v;
    std::copy_if(args->entries, args->entries + args->num_entries, std::back_inserter(v),
                 [](const polychip_kernel_entry& e) { return std::string_view(e.op) != "exp"; });
    return v;
  }();
  args->entries = kept.data();
  args->num_entries = static_cast<int32_t>(kept.size());
  return POLYCHIP_OK;
}
const polychip_adapter_api* noexp_adapter_get_api() {
  static const polychip_adapter_api api = [] {
    polychip_adapter_api a = *polychip_cpu_adapter_get_api();
    a.name = "noexp";
    a.kernel_table = &kernel_table_without_exp;
    return a;
  }();
  return &api;
}

class ExhaustiveUnaryTest : public ::testing::Test {
 protected:
  ExhaustiveUnaryTest() : runtime_(options()) {}
  static RuntimeOptions options() {
    RuntimeOptions o;
    o.builtin_adapters = {&polychip_cpu_adapter_get_api, &polychip_sim_adapter_get_api};
    return o;
  }
  CaseOutcome run_on(Runtime& runtime, const std::string& device, const CaseSpec& spec) {
    Device d = runtime.device(device);
    Stream stream(d);
    CaseContext ctx = test::case_context(runtime, d, stream, waivers_, device);
    ctx.repro_prefix = "repro ";
    return run_case(spec, ctx);
  }
  CaseOutcome run(const std::string& device, const CaseSpec& spec) {
    return run_on(runtime_, device, spec);
  }
  CaseOutcome run(const std::string& device, const std::string& id) {
    return run(device, parse_case_id(id));
  }
  void patch(const char* op, polychip_kernel_fn fn) {
    runtime_.dispatcher().patch("cpu.host", op, std::nullopt, fn, "exhaustive_unary_test");
  }
  static std::string message(const CaseOutcome& o) { return o.record.value("message", ""); }

  Runtime runtime_;
  WaiverList waivers_;
};

// Inputs per range: 2^22; 2^18 under the sanitizers, whose build checks
// memory errors, not coverage (and runs ~20x slower).
#if defined(__SANITIZE_ADDRESS__)
constexpr uint64_t kRange = uint64_t{1} << 18;
#else
constexpr uint64_t kRange = uint64_t{1} << 22;
#endif

// 6 ranges per op, each kRange inputs from: +0 and the positive subnormals;
// [0.5, 1) (log near 0, sqrt/rsqrt binade edges); 88 and up (exp's
// overflow, sigmoid/tanh saturation); +Inf and the NaNs above it; -0.5 and
// down (sigmoid, silu and gelu below 0, not yet saturated); -88 and down
// (exp's underflow into subnormals, gelu/silu tails).
constexpr uint32_t kInterestingStarts[] = {0x00000000, 0x3f000000, 0x42b00000,
                                           0x7f800000, 0xbf000000, 0xc2b00000};

TEST_F(ExhaustiveUnaryTest, CpuPassesEveryOpAroundInterestingExponents) {
  for (std::string_view op : exhaustive_f32_ops())
    for (uint32_t first : kInterestingStarts) {
      const CaseSpec spec = exhaustive_f32_case(op, first, kRange);
      const CaseOutcome out = run("cpu", spec);
      EXPECT_EQ(out.verdict, Verdict::kPass) << case_id(spec) << ": " << message(out);
      EXPECT_EQ(out.record["metrics"]["elements"], kRange);
      EXPECT_EQ(out.record["metrics"]["mismatches"], 0);
      EXPECT_TRUE(out.record.contains("worst")) << case_id(spec);
      // The rate over this run (not since the clock's epoch).
      EXPECT_GT(out.record["metrics"]["elements_per_second"].get<double>(), 1e4);
    }
}

TEST_F(ExhaustiveUnaryTest, SimFtzFailsExpAndLogNamingTheInputAndAChunk) {
  for (const char* op : {"exp", "log"}) {
    const CaseOutcome out = run("sim.ftz", exhaustive_f32_case(op, 0x3f000000, 2 * kRange));
    ASSERT_EQ(out.verdict, Verdict::kFail) << op;
    const std::string m = message(out);
    EXPECT_NE(m.find("inputs beyond tolerance"), std::string::npos) << m;
    EXPECT_NE(m.find("x = 0x3f"), std::string::npos) << m;
    // The first chunk, where the first failure is (both chunks fail).
    EXPECT_NE(m.find(fmt::format("repro {}/f32/{}/exhaustive+from=0x3f000000/", op,
                                 std::min(2 * kRange, kExhaustiveDispatchChunk))),
              std::string::npos)
        << m;
    ASSERT_TRUE(out.record.contains("failures"));
    EXPECT_EQ(out.record["failures"][0]["input_bits"], "0x3f000000");
    EXPECT_EQ(out.record["failures"].size(), 8u);  // the first 8 of many
  }
  // The other ops of sim.ftz are the cpu adapter's.
  EXPECT_EQ(run("sim.ftz", exhaustive_f32_case("tanh", 0x3f000000, kRange)).verdict,
            Verdict::kPass);
}

TEST_F(ExhaustiveUnaryTest, OneWrongInputIsFoundThatEverySampledCaseMisses) {
  patch("exp", &exp_wrong_at_one_input);
  // (The patch reads contiguous tensors only: strided cases are left out.)
  for (Level level : {Level::kQuick, Level::kStandard}) {
    for (const CaseSpec& spec : cases_for_level(level)) {
      if (spec.op == "exp" && spec.dtype == DType::kF32 && !spec.has("strided")) {
        EXPECT_EQ(run("cpu", spec).verdict, Verdict::kPass) << case_id(spec);
      }
    }
  }
  const CaseOutcome out = run("cpu", exhaustive_f32_case("exp", 0x3fb40000, 2 * kRange));
  ASSERT_EQ(out.verdict, Verdict::kFail);
  EXPECT_EQ(out.record["metrics"]["mismatches"], 1);
  EXPECT_EQ(out.record["failures"][0]["input_bits"], "0x3fb504f3");
  EXPECT_NE(message(out).find(fmt::format("1 of {} inputs beyond tolerance", 2 * kRange)),
            std::string::npos)
      << message(out);
  // The chunk named reproduces it alone.
  const std::string chunk = case_id(
      exhaustive_f32_case("exp", 0x3fb40000, std::min(2 * kRange, kExhaustiveDispatchChunk)));
  EXPECT_NE(message(out).find("repro " + chunk), std::string::npos) << message(out);
  EXPECT_EQ(run("cpu", chunk).verdict, Verdict::kFail);
}

TEST_F(ExhaustiveUnaryTest, AWritePastTheOutputFailsNamingTheOffset) {
  patch("exp", &exp_writing_past_the_end);
  const CaseOutcome out = run("cpu", "exp/f32/1000/exhaustive+from=0x3f800000/seed=1");
  ASSERT_EQ(out.verdict, Verdict::kFail);
  EXPECT_NE(message(out).find("output 'y': a write outside its elements: element offset +1 past "
                              "its last element (inputs 0x3f800000 .. 0x3f8003e7; chunk: repro "
                              "exp/f32/1000/exhaustive+from=0x3f800000/seed=1)"),
            std::string::npos)
      << message(out);
}

TEST_F(ExhaustiveUnaryTest, AWriteBeforeTheOutputOrIntoTheInputFailsNamingWhere) {
  const std::string id = "exp/f32/1000/exhaustive+from=0x3f800000/seed=1";
  patch("exp", &exp_writing_before_the_start);
  CaseOutcome out = run("cpu", id);
  ASSERT_EQ(out.verdict, Verdict::kFail);
  EXPECT_NE(message(out).find(
                "output 'y': a write outside its elements: 4 byte(s) before its first element"),
            std::string::npos)
      << message(out);
  patch("exp", &exp_modifying_its_input);
  out = run("cpu", id);
  ASSERT_EQ(out.verdict, Verdict::kFail);
  EXPECT_NE(message(out).find("input 'x' was modified at element 3 "), std::string::npos)
      << message(out);
}

TEST_F(ExhaustiveUnaryTest, EveryInputIsCheckedOnceWhateverThreadChecksIt) {
  // Wrong everywhere, on an odd count the threads split unevenly.
  patch("exp", &exp_always_inf);
  const uint64_t n = (uint64_t{1} << 20) + 3;
  const CaseOutcome out = run("cpu", exhaustive_f32_case("exp", 0x3f800000, n));
  ASSERT_EQ(out.verdict, Verdict::kFail);
  EXPECT_EQ(out.record["metrics"]["mismatches"], n);
  // The first failures in input order; of equally bad inputs the first is the worst.
  ASSERT_EQ(out.record["failures"].size(), 8u);
  EXPECT_EQ(out.record["failures"][7]["input_bits"], "0x3f800007");
  EXPECT_EQ(out.record["worst"]["input_bits"], "0x3f800000");
}

TEST_F(ExhaustiveUnaryTest, OneWholeChunkIsOneCall) {
  // (Not a second, empty call after it.)
  patch("exp", &counted_exp);
  exp_calls = 0;
  const CaseOutcome out =
      run("cpu", exhaustive_f32_case("exp", 0x3f800000, kExhaustiveDispatchChunk));
  EXPECT_EQ(out.verdict, Verdict::kPass) << message(out);
  EXPECT_EQ(exp_calls, 1);
}

TEST_F(ExhaustiveUnaryTest, AFailureInALaterShorterChunkIsFoundAndThatChunkNamed) {
  patch("exp", &exp_wrong_at_one_input);
  // Two chunks, the second of 100 inputs with the wrong one 50 in.
  const uint32_t from = kBadInput - static_cast<uint32_t>(kExhaustiveDispatchChunk) - 50;
  CaseOutcome out = run("cpu", exhaustive_f32_case("exp", from, kExhaustiveDispatchChunk + 100));
  ASSERT_EQ(out.verdict, Verdict::kFail);
  EXPECT_EQ(out.record["metrics"]["mismatches"], 1);
  EXPECT_EQ(out.record["failures"][0]["input_bits"], "0x3fb504f3");
  EXPECT_EQ(out.record["chunk_repro"], "repro exp/f32/100/exhaustive+from=0x3fb504c1/seed=1");
  // Ending one input before it: the second chunk is one input long and passes.
  out = run("cpu", exhaustive_f32_case("exp", from - 50, kExhaustiveDispatchChunk + 1));
  EXPECT_EQ(out.verdict, Verdict::kPass) << message(out);
}

TEST_F(ExhaustiveUnaryTest, ErrorsAtABinadeEdgeAreJudgedByTheOracle) {
  // From 4,096 inputs below 1/4 on: of rsqrt's exact results only 2, at 1/4,
  // is a power of two (not the first input: the oracle must see the right
  // one). The input below 1/4 also rounds to 2 but is settled in float64.
  const CaseSpec spec = exhaustive_f32_case("rsqrt", 0x3e7ff000, uint64_t{1} << 20);
  patch("rsqrt", &rsqrt_high_at_powers_of_two<2>);
  CaseOutcome out = run("cpu", spec);
  EXPECT_EQ(out.verdict, Verdict::kPass) << message(out);
  // Only 1/4, whose result 2 is a power of two, goes to the oracle.
  EXPECT_EQ(out.record["metrics"]["oracle_evaluations"], 1);
  EXPECT_NEAR(out.record["metrics"]["max_tolerance_fraction"].get<double>(), 0.8, 1e-6);
  EXPECT_EQ(out.record["metrics"]["max_ulp_error"], 2.0);
  patch("rsqrt", &rsqrt_high_at_powers_of_two<3>);
  out = run("cpu", spec);
  ASSERT_EQ(out.verdict, Verdict::kFail);
  EXPECT_EQ(out.record["metrics"]["mismatches"], 2);
  EXPECT_EQ(out.record["failures"][0]["input_bits"], "0x3e7fffff");  // 2.75 ulps
  EXPECT_EQ(out.record["failures"][1]["input_bits"], "0x3e800000");  // 3 ulps
}

TEST_F(ExhaustiveUnaryTest, ErrorsNearTheBoundAtABinadeEdgeOnEitherSideGoToTheOracle) {
  // x = -2^-41 on: exp(x) is 4.5e-13 below 1, within 1e-12 of the edge;
  // x = +2^-41 on: as far above it. 2 ulps off is 0.57 of exp's bound (3 +
  // 0.5), which the other binade's ulp would make 1.14 or 0.29: undecided.
  // Correctly rounded: far from the bound in either binade, settled.
  CaseOutcome out = run("cpu", exhaustive_f32_case("exp", 0xab000000, 4096));
  EXPECT_EQ(out.verdict, Verdict::kPass) << message(out);
  EXPECT_EQ(out.record["metrics"]["oracle_evaluations"], 0);
  patch("exp", &off_by<exp_of, -2>);
  out = run("cpu", exhaustive_f32_case("exp", 0xab000000, 4096));
  EXPECT_EQ(out.verdict, Verdict::kPass) << message(out);
  EXPECT_EQ(out.record["metrics"]["oracle_evaluations"], 4096);
  patch("exp", &off_by<exp_of, 2>);
  out = run("cpu", exhaustive_f32_case("exp", 0x2b000000, 4096));
  EXPECT_EQ(out.verdict, Verdict::kPass) << message(out);
  EXPECT_EQ(out.record["metrics"]["oracle_evaluations"], 4096);
  // x = 2^-30 on: exp(x) is 9e-10 above 1, not at an edge: settled.
  out = run("cpu", exhaustive_f32_case("exp", 0x30800000, 4096));
  EXPECT_EQ(out.verdict, Verdict::kPass) << message(out);
  EXPECT_EQ(out.record["metrics"]["oracle_evaluations"], 0);
}

TEST_F(ExhaustiveUnaryTest, AnExactZeroIsNoBinadeEdge) {
  // sqrt(+0) is 0 exactly; 3 subnormal ulps off is 0.86 of sqrt's bound (3
  // + 0.5). Zero has no neighbouring binade whose ulp could apply, so
  // float64 settles it (frexp's mantissa of 0 would look like an edge).
  patch("sqrt", &off_by<sqrt_of, 3>);
  const CaseOutcome out = run("cpu", exhaustive_f32_case("sqrt", 0x00000000, 1));
  EXPECT_EQ(out.verdict, Verdict::kPass) << message(out);
  EXPECT_NEAR(out.record["metrics"]["max_tolerance_fraction"].get<double>(), 3 / 3.5, 1e-9);
  EXPECT_EQ(out.record["metrics"]["oracle_evaluations"], 0);
}

TEST_F(ExhaustiveUnaryTest, AFractionWithinTheMarginOfTheBoundGoesToTheOracle) {
  // exp(0x1.012e3cp+0) is 0.4999978 ulp above a float, far from a binade
  // edge: 3 ulps below that float is 0.9999994 of exp's bound (3 + 0.5),
  // within 1e-5 of 1, where float64 does not decide. It alone of
  // these 64 inputs goes to the oracle, which passes it.
  patch("exp", &off_by<exp_of, -3>);
  const CaseOutcome out = run("cpu", exhaustive_f32_case("exp", 0x3f809700, 64));
  EXPECT_EQ(out.verdict, Verdict::kPass) << message(out);
  EXPECT_EQ(out.record["metrics"]["oracle_evaluations"], 1);
  EXPECT_EQ(out.record["worst"]["input_bits"], "0x3f80971e");
  EXPECT_NEAR(out.record["metrics"]["max_tolerance_fraction"].get<double>(), 0.9999994, 1e-7);
}

TEST_F(ExhaustiveUnaryTest, AnUnsupportedCallIsNotSupportedAnyOtherErrorFails) {
  patch("exp", &exp_returning<POLYCHIP_UNSUPPORTED>);
  const std::string id = "exp/f32/16/exhaustive+from=0x3f800000/seed=1";
  EXPECT_EQ(run("cpu", id).verdict, Verdict::kNotSupported);
  patch("exp", &exp_returning<POLYCHIP_INTERNAL>);
  const CaseOutcome out = run("cpu", id);
  EXPECT_EQ(out.verdict, Verdict::kFail);
  EXPECT_NE(message(out).find("the call failed"), std::string::npos) << message(out);
}

TEST_F(ExhaustiveUnaryTest, ADeviceWithoutTheKernelIsNotSupportedBeforeAnyCall) {
  RuntimeOptions o;
  o.builtin_adapters = {&noexp_adapter_get_api};
  Runtime noexp(o);
  const CaseOutcome out = run_on(noexp, "noexp", exhaustive_f32_case("exp", 0x3f800000, 16));
  EXPECT_EQ(out.verdict, Verdict::kNotSupported);
  EXPECT_EQ(message(out), "noexp:0 has no kernel for exp(f32, f32)");
  // Its other kernels run.
  EXPECT_EQ(run_on(noexp, "noexp", exhaustive_f32_case("log", 0x3f800000, 16)).verdict,
            Verdict::kPass);
}

TEST_F(ExhaustiveUnaryTest, TheLastInputsBelow2To32Run) {
  // The negative NaNs: from + count = 2^32 exactly.
  const CaseOutcome out = run("cpu", "exp/f32/16/exhaustive+from=0xfffffff0/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kPass) << message(out);
  EXPECT_EQ(out.record["metrics"]["elements"], 16);
}

TEST_F(ExhaustiveUnaryTest, ExhaustiveCasesMustSplit2To32Evenly) {
  EXPECT_EQ(exhaustive_f32_cases(uint64_t{1} << 30).size(), 8u * 4);
  EXPECT_THROW(exhaustive_f32_cases(0), Error);
  EXPECT_THROW(exhaustive_f32_cases(3), Error);
}

TEST_F(ExhaustiveUnaryTest, BadIdsFailAsHarnessErrors) {
  for (const char* id :
       {"exp/f32/16/exhaustive+from=0xfffffff8/seed=1",  // past 2^32
        "exp/f32/16/exhaustive/seed=1",                  // no from=
        "exp/f32/16/exhaustive+from=12/seed=1",          // not hex
        "neg/f32/16/exhaustive+from=0x00000000/seed=1",  // not in the list
        "exp/f32/4x4/exhaustive+from=0x00000000/seed=1",
        "exp/f32/0/exhaustive+from=0x00000000/seed=1",  // no inputs
        "exp/f32/16/exhaustive+from=00000000/seed=1",   // no 0x
        "exp/f32/16/exhaustive+from=0x0000000g/seed=1",
        // Not as exhaustive_f32_case writes it (one id per case):
        "exp/f32/16/exhaustive+from=0x0/seed=1", "exp/f32/16/exhaustive+from=0x3F800000/seed=1"}) {
    const CaseOutcome out = run("cpu", id);
    EXPECT_EQ(out.verdict, Verdict::kFail) << id;
    EXPECT_NE(message(out).find("harness: cannot build the case"), std::string::npos) << id;
  }
}

TEST_F(ExhaustiveUnaryTest, FullLevelCoversEveryInputOfEveryOpOnce) {
  std::map<std::string, uint64_t> next;  // op -> first bit pattern not yet covered
  for (const CaseSpec& spec : cases_for_level(Level::kFull)) {
    if (!is_exhaustive_f32(spec)) continue;
    uint64_t& n = next[spec.op];
    ASSERT_EQ(spec.value_of("from"), fmt::format("0x{:08x}", n)) << case_id(spec);
    n += static_cast<uint64_t>(spec.dims[0]);
  }
  ASSERT_EQ(next.size(), 8u);
  for (const auto& [op, n] : next) EXPECT_EQ(n, uint64_t{1} << 32) << op;
  for (Level level : {Level::kQuick, Level::kStandard})
    for (const CaseSpec& spec : cases_for_level(level)) EXPECT_FALSE(is_exhaustive_f32(spec));
}

}  // namespace
}  // namespace polychip::precision
