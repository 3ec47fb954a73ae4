// run_case on the real cpu device, and on kernels patched in through
// Dispatcher::patch to misbehave in each way a verdict must name.
#include "case_runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kernel_test_support.hpp"
#include "metrics.hpp"
#include "polychip/hal.hpp"
#include "polychip/op_contract.hpp"
#include "precision/oracle/oracle.hpp"
#include "problem.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);

namespace polychip::precision {
namespace {

using test::host_f32;
int64_t numel(const polychip_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

// y = x: wrong everywhere but at 0.
polychip_status identity_exp(const polychip_kernel_args* a) {
  float *x = host_f32(a, 0), *y = host_f32(a, 1);
  for (int64_t i = 0; i < numel(a->tensors[0]); ++i) y[i] = x[i];
  return POLYCHIP_OK;
}
polychip_status unsupported_exp(const polychip_kernel_args*) { return POLYCHIP_UNSUPPORTED; }
// Correct values, but written as if y were contiguous (ignores the strides).
polychip_status stride_ignoring_exp(const polychip_kernel_args* a) {
  float *x = host_f32(a, 0), *y = host_f32(a, 1);
  for (int64_t i = 0; i < numel(a->tensors[0]); ++i) y[i] = std::exp(x[2 * i]);
  return POLYCHIP_OK;
}
// Correctly rounded except 3 ulp high on one element: within the OpenCL
// bound (3), but far worse than the NVIDIA emulation.
polychip_status sloppy_exp(const polychip_kernel_args* a) {
  float *x = host_f32(a, 0), *y = host_f32(a, 1);
  for (int64_t i = 0; i < numel(a->tensors[0]); ++i)
    y[i] = static_cast<float>(std::exp(double{x[i]}));
  uint32_t bits;
  std::memcpy(&bits, &y[0], 4);
  bits += 3;
  std::memcpy(&y[0], &bits, 4);
  return POLYCHIP_OK;
}

// Correct values, plus a write one element past the end of y (or before its
// start): only a guard band can see it on a contiguous output.
void exact_exp(const polychip_kernel_args* a) {
  float *x = host_f32(a, 0), *y = host_f32(a, 1);
  for (int64_t i = 0; i < numel(a->tensors[0]); ++i)
    y[i] = static_cast<float>(std::exp(double{x[i]}));
}
polychip_status exp_writing_past_the_end(const polychip_kernel_args* a) {
  exact_exp(a);
  host_f32(a, 1)[numel(a->tensors[1])] = 0.0f;
  return POLYCHIP_OK;
}
polychip_status exp_writing_before_the_start(const polychip_kernel_args* a) {
  exact_exp(a);
  host_f32(a, 1)[-1] = 0.0f;
  return POLYCHIP_OK;
}
// Correct, except that every second call is one ulp off at element 3.
polychip_status nondeterministic_exp(const polychip_kernel_args* a) {
  static int calls = 0;
  exact_exp(a);
  if (++calls % 2 == 0) {
    float* y = host_f32(a, 1);
    uint32_t bits;
    std::memcpy(&bits, &y[3], 4);
    bits ^= 1;
    std::memcpy(&y[3], &bits, 4);
  }
  return POLYCHIP_OK;
}
// Correct y, but x[2] overwritten afterwards (a kernel using its input as
// scratch), with a number or with NaN.
polychip_status exp_overwriting_its_input(const polychip_kernel_args* a) {
  exact_exp(a);
  host_f32(a, 0)[2] = 1.5f;
  return POLYCHIP_OK;
}
polychip_status exp_writing_nan_into_its_input(const polychip_kernel_args* a) {
  exact_exp(a);
  host_f32(a, 0)[2] = NAN;
  return POLYCHIP_OK;
}

// Every output of the call (contiguous f32) set to `value`.
void fill_outputs(const polychip_kernel_args* a, float value) {
  const OpSpec* op = find_op(a->op);
  for (int k = 0; k < a->num_tensors; ++k)
    if (op->tensors[static_cast<size_t>(k)].is_output)
      std::fill_n(host_f32(a, k), numel(a->tensors[k]), value);
}
polychip_status nan_outputs(const polychip_kernel_args* a) {
  fill_outputs(a, NAN);
  return POLYCHIP_OK;
}
// Zeros, and 1e30 at one element of one output: the case fails with its
// worst element there.
polychip_status wrong_most_at(const polychip_kernel_args* a, int output, bool last) {
  fill_outputs(a, 0.0f);
  const OpSpec* op = find_op(a->op);
  int y = 0;
  while (!op->tensors[static_cast<size_t>(y)].is_output) ++y;
  y += output;
  host_f32(a, y)[last ? numel(a->tensors[y]) - 1 : 0] = 1e30f;
  return POLYCHIP_OK;
}
polychip_status wrong_most_at_the_last_element(const polychip_kernel_args* a) {
  return wrong_most_at(a, 0, true);
}
polychip_status wrong_most_at_the_first_element(const polychip_kernel_args* a) {
  return wrong_most_at(a, 0, false);
}
polychip_status wrong_most_in_the_second_output(const polychip_kernel_args* a) {
  return wrong_most_at(a, 1, true);
}

// relu that passes negatives through: wrong against exact zeros.
polychip_status leaky_relu(const polychip_kernel_args* a) {
  float *x = host_f32(a, 0), *y = host_f32(a, 1);
  for (int64_t i = 0; i < numel(a->tensors[0]); ++i) y[i] = x[i];
  return POLYCHIP_OK;
}

// -x moved `ulps` away from zero: neg's bound is 0 ulp, so any such
// element is beyond its limit of 0.5 ulp (f32) or 1 ulp (f64).
template <typename T, int ulps>
polychip_status neg_off_by_ulps(const polychip_kernel_args* a) {
  T* x = reinterpret_cast<T*>(host_f32(a, 0));
  T* y = reinterpret_cast<T*>(host_f32(a, 1));
  for (int64_t i = 0; i < numel(a->tensors[0]); ++i) {
    y[i] = -x[i];
    for (int k = 0; k < ulps; ++k) y[i] = std::nextafter(y[i], std::copysign(T(INFINITY), y[i]));
  }
  return POLYCHIP_OK;
}

// Row sums of a [rows, len] f32 tensor, in double, with row 0 one ulp high:
// well inside a rounding tolerance, wrong against an exact-integer result.
polychip_status reduce_sum_one_ulp_high(const polychip_kernel_args* a) {
  float *x = host_f32(a, 0), *y = host_f32(a, 1);
  const int64_t rows = numel(a->tensors[1]), len = numel(a->tensors[0]) / rows;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < len; ++j) sum += x[r * len + j];
    y[r] = static_cast<float>(sum);
  }
  y[0] = std::nextafter(y[0], INFINITY);
  return POLYCHIP_OK;
}

// A perfect "NVIDIA": the exact result rounded once to each output dtype.
void rounded_oracle(const OpSpec& op, std::span<const HostTensor> in, std::span<HostTensor> out,
                    const polychip_op_attrs& attrs) {
  oracle_run(op, in, out, attrs);
  for (auto& t : out)
    for (auto& v : t.values) v = round_to_dtype(v, t.dtype);
}

// Element [index...] of a row-major host tensor.
double at(const HostTensor& t, std::initializer_list<int64_t> index) {
  int64_t flat = 0;
  size_t d = 0;
  for (int64_t i : index) flat = flat * t.shape[d++] + i;
  return t.values[static_cast<size_t>(flat)];
}
std::vector<double> row_of(const HostTensor& x, int64_t r) {
  std::vector<double> v;
  for (int64_t c = 0; c < x.shape[1]; ++c) v.push_back(at(x, {r, c}));
  return v;
}
std::vector<double> column_of(const HostTensor& x, int64_t c) {
  std::vector<double> v;
  for (int64_t r = 0; r < x.shape[0]; ++r) v.push_back(at(x, {r, c}));
  return v;
}
nlohmann::json hex_values(const std::vector<double>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (double x : v) out.push_back(hex_float(x));
  return out;
}

class CaseRunnerTest : public ::testing::Test {
 protected:
  CaseRunnerTest() : runtime_(options()), device_(runtime_.device("cpu")), stream_(device_) {
    ctx_ = test::case_context(runtime_, device_, stream_, waivers_, "cpu");
    ctx_.references.nvidia = &rounded_oracle;
  }
  static RuntimeOptions options() {
    RuntimeOptions o;
    o.builtin_adapters = {&polychip_cpu_adapter_get_api};
    return o;
  }
  CaseOutcome run(const char* id) { return run_case(parse_case_id(id), ctx_); }
  void patch_exp(polychip_kernel_fn fn) { patch("exp", fn); }
  void patch(const char* op, polychip_kernel_fn fn) {
    runtime_.dispatcher().patch(device_.device_type(), op, std::nullopt, fn, "case_runner_test");
  }
  std::string message_of(const char* id) { return run(id).record.value("message", ""); }
  // An expected failure of exp in f32 on cpu.
  void waive_exp_f32() {
    waivers_ = WaiverList::from_json({{"schema", "polychip.waivers/1"},
                                      {"waivers",
                                       {{{"adapter", "cpu"},
                                         {"op", "exp"},
                                         {"dtype", "f32"},
                                         {"kind", "expected_failure"},
                                         {"reason", "test"}}}}},
                                     "test");
  }
  // Runs `id` with its op patched to `fn`, expecting a failure: the record's
  // worst element, and the problem (the inputs the case ran on).
  std::pair<nlohmann::json, Problem> worst_of(const char* id, polychip_kernel_fn fn) {
    const CaseSpec spec = parse_case_id(id);
    patch(spec.op.c_str(), fn);
    const CaseOutcome out = run(id);
    EXPECT_EQ(out.verdict, Verdict::kFail) << id << ": " << out.record.dump(1);
    return {out.record.value("worst", nlohmann::json::object()), build_problem(spec, kOracle)};
  }

  Runtime runtime_;
  Device device_;
  Stream stream_;
  WaiverList waivers_;
  CaseContext ctx_;
};

TEST_F(CaseRunnerTest, CpuKernelsPassWithFullRecord) {
  for (const char* id : {"exp/f32/100/seed=1", "gemm/bf16/8x9x10/tb+beta/seed=2",
                         "reduce_sum/f16/5x7/strided/seed=3", "layernorm/f32/4x33/offset/seed=4",
                         "add/f32/17x33/broadcast/seed=5"}) {
    auto out = run(id);
    EXPECT_EQ(out.verdict, Verdict::kPass) << id << ": " << out.record.dump(1);
    EXPECT_EQ(out.record["id"], id);
    EXPECT_EQ(out.record["suite"], "precision");
    EXPECT_EQ(out.record["adapter"], "cpu");
    EXPECT_TRUE(out.record["metrics"].contains("max_ulp_error"));
    EXPECT_TRUE(out.record["metrics"].contains("mean_rel_error"));
    EXPECT_TRUE(out.record["metrics"].contains("error_ratio_to_nvidia"));
    EXPECT_TRUE(out.record.contains("tolerance"));
  }
}

TEST_F(CaseRunnerTest, WrongKernelFailsWithReproducerAndWorstElementInHex) {
  patch_exp(&identity_exp);
  auto out = run("exp/f32/100/seed=1");
  ASSERT_EQ(out.verdict, Verdict::kFail);
  EXPECT_EQ(out.record["repro"],
            "polychip certify --suite precision --adapters cpu --case exp/f32/100/seed=1");
  const auto& w = out.record["worst"];
  EXPECT_EQ(w["output"], "y");
  ASSERT_TRUE(w["inputs"].contains("x"));
  // y = x: the worst element's device value is its input, in %a form.
  EXPECT_EQ(w["device"], w["inputs"]["x"]);
  EXPECT_NE(w["device"].get<std::string>().find("0x"), std::string::npos);
}

TEST_F(CaseRunnerTest, UnsupportedKernelIsNotSupported) {
  patch_exp(&unsupported_exp);
  EXPECT_EQ(run("exp/f32/10/seed=1").verdict, Verdict::kNotSupported);
}

TEST_F(CaseRunnerTest, WritingOutsideTheOutputViewFails) {
  patch_exp(&stride_ignoring_exp);
  auto out = run("exp/f32/4x5/strided/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kFail);
  EXPECT_NE(out.record["message"].get<std::string>().find("outside"), std::string::npos)
      << out.record["message"];
}

TEST_F(CaseRunnerTest, WriteIntoTheGuardBandOfAContiguousOutputFailsNamingTheOffset) {
  patch_exp(&exp_writing_past_the_end);
  auto out = run("exp/f32/100/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kFail);
  EXPECT_NE(out.record["message"].get<std::string>().find(
                "output 'y': a write outside its elements: 1 byte(s) past its last element "
                "(element offset +1)"),
            std::string::npos)
      << out.record["message"];
  patch_exp(&exp_writing_before_the_start);
  EXPECT_NE(message_of("exp/f32/100/seed=1").find("4 byte(s) before its first element"),
            std::string::npos);
}

TEST_F(CaseRunnerTest, OneUlpDifferenceBetweenTwoRunsIsNondeterministic) {
  patch_exp(&nondeterministic_exp);
  auto out = run("exp/f32/100/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kFail);
  EXPECT_NE(out.record["message"].get<std::string>().find(
                "nondeterministic: runs differ at element 3 [3] of 'y'"),
            std::string::npos)
      << out.record["message"];
}

TEST_F(CaseRunnerTest, FailureAgainstAnExactZeroIsInAbsoluteTermsWithDecimalValues) {
  patch("relu", &leaky_relu);
  const std::string m = message_of("relu/f32/100/seed=1");
  EXPECT_NE(m.find("from an exact 0"), std::string::npos) << m;
  EXPECT_EQ(m.find("x the tolerance"), std::string::npos) << m;
  // The worst element's index, and its values in decimal beside the hex.
  EXPECT_NE(m.find("element "), std::string::npos) << m;
  EXPECT_NE(m.find("vs exact 0x0p+0 = 0)"), std::string::npos) << m;
  patch_exp(&identity_exp);
  const std::string e = message_of("exp/f32/100/seed=1");
  EXPECT_NE(e.find("ulp off, 3.5 ulp allowed (bound 3 + 0.5 for the exact value's rounding)"),
            std::string::npos)
      << e;
}

// The limit a ulp-mode failure names is the one the check applied: the
// bound plus the exact value's rounding, not the bound alone ("0.906 ulp
// off, 0 ulp allowed" read as a failure by 0.906 ulp of a 0 ulp limit).
TEST_F(CaseRunnerTest, AnUlpFailureNamesTheLimitApplied) {
  patch("neg", &neg_off_by_ulps<float, 1>);
  const std::string f32 = message_of("neg/f32/100/seed=1");
  EXPECT_NE(f32.find("worst is 1 ulp off, 0.5 ulp allowed (bound 0 + 0.5 for the exact value's "
                     "rounding)"),
            std::string::npos)
      << f32;
  // f64 outputs get 1 ulp of rounding (the oracle's value is a double): 1 ulp
  // off is within the limit (if far worse than NVIDIA), 2 fail against it.
  patch("neg", &neg_off_by_ulps<double, 1>);
  EXPECT_EQ(run("neg/f64/100/seed=1").verdict, Verdict::kQualityWarning);
  patch("neg", &neg_off_by_ulps<double, 2>);
  const std::string f64 = message_of("neg/f64/100/seed=1");
  EXPECT_NE(f64.find("worst is 2 ulp off, 1 ulp allowed (bound 0 + 1 for the exact value's "
                     "rounding)"),
            std::string::npos)
      << f64;
}

TEST_F(CaseRunnerTest, ExactIntegerCasesHaveZeroTolerance) {
  patch("reduce_sum", &reduce_sum_one_ulp_high);
  EXPECT_EQ(run("reduce_sum/f32/16x256/seed=1").verdict, Verdict::kPass);
  auto out = run("reduce_sum/f32/16x256/exact/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kFail) << out.record.dump(1);
  EXPECT_EQ(out.record["tolerance"]["mode"], "exact");
}

TEST_F(CaseRunnerTest, CaseWhoseExactOutputIsMostlyOneValueIsMistrustedNotPass) {
  // 4 ids into 1,000 rows: 99.6% of dweight is 0.
  auto out = run("embedding_backward/f32/4x1000x4/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kMistrusted) << out.record.dump(1);
  EXPECT_FALSE(is_failure(out.verdict));
  EXPECT_NE(out.record["message"].get<std::string>().find("mistrusted: 3984 of 4000"),
            std::string::npos)
      << out.record["message"];
  EXPECT_EQ(run("embedding_backward/f32/64x8x16/exact+repeated/seed=1").verdict, Verdict::kPass);
}

TEST_F(CaseRunnerTest, WithinToleranceButWorseThanNvidiaIsQualityWarning) {
  patch_exp(&sloppy_exp);
  auto out = run("exp/f32/100/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kQualityWarning) << out.record.dump(1);
}

TEST_F(CaseRunnerTest, WaivedFailureKeepsTheWaiverAndTheOriginalVerdict) {
  waive_exp_f32();
  patch_exp(&identity_exp);
  auto out = run("exp/f32/100/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kWaived);
  EXPECT_EQ(out.record["waived_verdict"], "Fail");
  EXPECT_EQ(out.record["waiver"]["kind"], "expected_failure");
}

TEST_F(CaseRunnerTest, HarnessErrorsAreReportedNotThrown) {
  ctx_.references.oracle = nullptr;  // softmax_backward derives y with the oracle
  auto out = run("softmax_backward/f32/4x5/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kFail);
  EXPECT_NE(out.record["message"].get<std::string>().find("harness"), std::string::npos);
}

TEST_F(CaseRunnerTest, AnInputTheKernelChangedFailsNamingIt) {
  for (polychip_kernel_fn fn : {&exp_overwriting_its_input, &exp_writing_nan_into_its_input}) {
    patch_exp(fn);
    auto out = run("exp/f32/100/seed=1");
    EXPECT_EQ(out.verdict, Verdict::kFail) << out.record.dump(1);
    EXPECT_NE(out.record.value("message", "").find("input 'x' was modified at element 2"),
              std::string::npos)
        << out.record["message"];
  }
}

TEST_F(CaseRunnerTest, GemmMathModesAreJudgedByTheirOwnTolerances) {
  const ToleranceTable& table = ToleranceTable::builtin();
  const double strict = table.lookup("gemm", DType::kF32).rtol;
  const double tf32 = table.lookup("gemm:tf32", DType::kF32).rtol;
  // rpr widens the absolute term only.
  const double rpr = table.lookup("gemm:rpr", DType::kBF16).atol_factor;
  ASSERT_NE(strict, tf32);
  ASSERT_NE(table.lookup("gemm", DType::kBF16).atol_factor, rpr);
  EXPECT_EQ(run("gemm/f32/8x9x10/seed=1").record["tolerance"]["rtol"], strict);
  EXPECT_EQ(run("gemm/f32/8x9x10/tf32/seed=1").record["tolerance"]["rtol"], tf32);
  EXPECT_EQ(run("gemm/bf16/8x9x16/rpr/seed=1").record["tolerance"]["atol_factor"], rpr);
  EXPECT_EQ(run("gemm/bf16/8x9x16/seed=1").record["tolerance"]["atol_factor"],
            table.lookup("gemm", DType::kBF16).atol_factor);
}

// A failing gemm's record carries, beside its worst element, the row of
// op(a), the column of op(b) and the element of c it was computed from.
TEST_F(CaseRunnerTest, WorstGemmElementCarriesItsRowOfAAndColumnOfB) {
  for (const char* id : {"gemm/f32/5x6x7/seed=1", "gemm/f32/5x6x7/ta/seed=2",
                         "gemm/f32/5x6x7/tb+beta/seed=3", "gemm/f32/3x5x6x7/ta+tb+beta/seed=4"}) {
    const auto result = worst_of(id, &wrong_most_at_the_last_element);
    const nlohmann::json& w = result.first;
    const Problem& p = result.second;
    const bool batched = p.spec.dims.size() == 4;
    const int64_t m = p.spec.dims[batched], n = p.spec.dims[batched + 1], k = p.spec.dims.back();
    // The last element of y: the last batch, row m - 1, column n - 1.
    const int64_t b = batched ? p.spec.dims[0] - 1 : 0, i = m - 1, j = n - 1;
    EXPECT_EQ(w["flat_index"], (b + 1) * m * n - 1) << id;
    auto element = [&](const HostTensor& t, int64_t r, int64_t c) {
      return batched ? at(t, {b, r, c}) : at(t, {r, c});
    };
    const bool ta = p.spec.has("ta"), tb = p.spec.has("tb");
    std::vector<double> row, column;
    for (int64_t q = 0; q < k; ++q) {
      row.push_back(ta ? element(p.inputs[0], q, i) : element(p.inputs[0], i, q));
      column.push_back(tb ? element(p.inputs[1], j, q) : element(p.inputs[1], q, j));
    }
    const nlohmann::json& ins = w["inputs"];
    EXPECT_EQ(ins[fmt::format("a row {}", i)], hex_values(row)) << id << ": " << ins.dump(1);
    EXPECT_EQ(ins[fmt::format("b column {}", j)], hex_values(column)) << id;
    EXPECT_EQ(ins["c"], hex_float(element(p.inputs[2], i, j))) << id;
  }
  // A long row is cut at 64 values, saying how many more there were.
  const auto result = worst_of("gemm/f32/2x3x70/seed=5", &wrong_most_at_the_last_element);
  const nlohmann::json& row = result.first["inputs"]["a row 1"];
  ASSERT_EQ(row.size(), 65u) << row.dump();
  EXPECT_EQ(row[63], hex_float(at(result.second.inputs[0], {1, 63})));
  EXPECT_EQ(row[64], "... 6 more");
  // 64 values are shown whole.
  EXPECT_EQ(worst_of("gemm/f32/2x3x64/seed=6", &wrong_most_at_the_last_element)
                .first["inputs"]["a row 1"]
                .size(),
            64u);
}

// Reductions, softmax, norms and losses: the row (or, along axis 0, the
// column) of the first input behind the worst element.
TEST_F(CaseRunnerTest, WorstElementOfARowOpCarriesItsRowOrColumn) {
  struct Expected {
    const char* id;
    std::string key;
    bool column;
    int64_t index;
  };
  for (const Expected& e : {Expected{"reduce_sum/f32/5x7/seed=1", "x row 4", false, 4},
                            Expected{"reduce_sum/f32/5x7/axis0/seed=1", "x column 6", true, 6},
                            Expected{"softmax/f32/5x7/seed=1", "x row 4", false, 4},
                            Expected{"softmax/f32/5x7/axis0/seed=1", "x column 6", true, 6},
                            Expected{"layernorm/f32/4x9/seed=1", "x row 3", false, 3},
                            Expected{"cross_entropy/f32/6x10/seed=1", "logits row 5", false, 5}}) {
    const auto result = worst_of(e.id, &wrong_most_at_the_last_element);
    const HostTensor& x = result.second.inputs[0];
    EXPECT_EQ(result.first["inputs"][e.key],
              hex_values(e.column ? column_of(x, e.index) : row_of(x, e.index)))
        << e.id << ": " << result.first.dump(1);
  }
  // A norm's dgamma sums over every row: no row of dy is shown (D = 2N, so
  // D / N would make one up).
  const auto dgamma =
      worst_of("layernorm_backward/f32/4x8/seed=1", &wrong_most_in_the_second_output);
  EXPECT_EQ(dgamma.first["output"], "dgamma");
  for (const auto& [key, value] : dgamma.first["inputs"].items())
    EXPECT_EQ(key.find(" row "), std::string::npos) << dgamma.first.dump(1);
  // Rows of no elements: nothing to show, and no division by their length.
  const auto empty = worst_of("reduce_sum/f32/5x0/seed=1", &wrong_most_at_the_last_element);
  EXPECT_EQ(empty.first["flat_index"], 4);
}

// embedding_backward: which rows of ids hold the worst element's id, and
// their dy values in its column.
TEST_F(CaseRunnerTest, WorstEmbeddingGradientCarriesTheRowsThatSumIntoIt) {
  const auto result =
      worst_of("embedding_backward/f32/16x5x4/repeated/seed=1", &wrong_most_at_the_last_element);
  const Problem& p = result.second;
  // The last element of dweight [5, 4]: id 4, column 3.
  nlohmann::json rows = nlohmann::json::array();
  std::vector<double> terms;
  for (int64_t r = 0; r < 16; ++r)
    if (p.inputs[0].values[static_cast<size_t>(r)] == 4) {
      rows.push_back(r);
      terms.push_back(at(p.inputs[1], {r, 3}));
    }
  ASSERT_FALSE(rows.empty());
  const nlohmann::json& ins = result.first["inputs"];
  EXPECT_EQ(ins["rows with id 4"], rows) << ins.dump(1);
  EXPECT_EQ(ins["dy column 3 of those rows"], hex_values(terms)) << ins.dump(1);
}

TEST_F(CaseRunnerTest, AWorstElementAtIndexZeroIsRecorded) {
  const auto result = worst_of("exp/f32/100/seed=1", &wrong_most_at_the_first_element);
  EXPECT_EQ(result.first["flat_index"], 0);
  EXPECT_EQ(result.first["output"], "y");
  // Elementwise: the element of x it came from, and no row of x.
  EXPECT_EQ(result.first["inputs"].size(), 1u) << result.first.dump(1);
}

TEST_F(CaseRunnerTest, AmongEquallyWrongOutputsTheFirstIsNamed) {
  // NaN everywhere: y, mean and rstd are all infinitely wrong.
  patch("layernorm", &nan_outputs);
  auto out = run("layernorm/f32/4x9/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kFail);
  EXPECT_EQ(out.record["worst"]["output"], "y") << out.record.dump(1);
  EXPECT_NE(out.record.value("message", "").find("elements of 'y'"), std::string::npos)
      << out.record["message"];
}

TEST_F(CaseRunnerTest, AWaiverLeavesAPassingCaseAlone) {
  waive_exp_f32();
  auto out = run("exp/f32/100/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kPass) << out.record.dump(1);
  EXPECT_FALSE(out.record.contains("waiver"));
}

TEST_F(CaseRunnerTest, ErrorRatioToNvidiaIsOneWhenBothAreExact) {
  // relu's results are exact (no rounding at all): both errors are 0.
  auto out = run("relu/f32/100/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kPass);
  EXPECT_EQ(out.record["metrics"]["error_ratio_to_nvidia"], 1.0) << out.record.dump(1);
}

TEST_F(CaseRunnerTest, WithoutAnNvidiaReferenceTheOracleAloneJudges) {
  ctx_.references.nvidia = nullptr;
  auto out = run("exp/f32/100/seed=1");
  EXPECT_EQ(out.verdict, Verdict::kPass);
  EXPECT_FALSE(out.record["metrics"].contains("error_ratio_to_nvidia")) << out.record.dump(1);
  // Nothing to be worse than: within tolerance is a pass.
  patch_exp(&sloppy_exp);
  EXPECT_EQ(run("exp/f32/100/seed=1").verdict, Verdict::kPass);
}

}  // namespace
}  // namespace polychip::precision
