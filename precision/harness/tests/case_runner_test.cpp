// run_case on the real cpu device, and on kernels patched in through
// Dispatcher::patch to misbehave in each way a verdict must name.
#include "case_runner.hpp"

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "kernel_test_support.hpp"
#include "polychip/hal.hpp"
#include "precision/oracle/oracle.hpp"

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
// relu that passes negatives through: wrong against exact zeros.
polychip_status leaky_relu(const polychip_kernel_args* a) {
  float *x = host_f32(a, 0), *y = host_f32(a, 1);
  for (int64_t i = 0; i < numel(a->tensors[0]); ++i) y[i] = x[i];
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

  Runtime runtime_;
  Device device_;
  Stream stream_;
  WaiverList waivers_;
  CaseContext ctx_;
};

TEST_F(CaseRunnerTest, CpuKernelsPassWithFullRecord) {
  for (const char* id : {"exp/f32/100/seed=1", "gemm/bf16/8x9x10/tb+beta/seed=2",
                         "reduce_sum/f16/5x7/strided/seed=3", "layernorm/f32/4x33/offset/seed=4"}) {
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
  EXPECT_NE(e.find("ulp off, 3 ulp allowed"), std::string::npos) << e;
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
  waivers_ = WaiverList::from_json({{"schema", "polychip.waivers/1"},
                                    {"waivers",
                                     {{{"adapter", "cpu"},
                                       {"op", "exp"},
                                       {"dtype", "f32"},
                                       {"kind", "expected_failure"},
                                       {"reason", "test"}}}}},
                                   "test");
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

}  // namespace
}  // namespace polychip::precision
