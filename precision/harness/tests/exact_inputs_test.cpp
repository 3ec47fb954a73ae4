// Exact-integer cases of attention and the norms (exact_inputs.hpp): their
// exact results are what a correct device computes bit for bit, they are
// not Mistrusted, and a kernel one ulp off on one element — well inside any
// rounding tolerance — fails them while it passes the ordinary cases.
#include "exact_inputs.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <set>

#include <gtest/gtest.h>

#include "case_runner.hpp"
#include "kernel_test_support.hpp"
#include "polychip/error.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);

namespace polychip::precision {
namespace {

// The oracle's result rounded to f32, with output 0's element 0 one ulp
// high: a kernel whose only defect is one wrong low bit (a lost term, a
// misplaced tail element, an approximated eps) at one element. Contiguous
// f32 tensors only.
polychip_status oracle_one_ulp_off(const polychip_kernel_args* a) {
  const OpSpec& op = *find_op(a->op);
  std::vector<HostTensor> in, out;
  for (int t = 0; t < a->num_tensors; ++t) {
    const polychip_tensor& pt = a->tensors[t];
    HostTensor h{DType::kF32, Shape(pt.shape, pt.shape + pt.rank), {}};
    const float* p = test::host_f32(a, t);
    if (!p) return POLYCHIP_UNSUPPORTED;
    if (!op.tensors[static_cast<size_t>(t)].is_output)
      h.values.assign(p, p + element_count(h.shape));
    (op.tensors[static_cast<size_t>(t)].is_output ? out : in).push_back(std::move(h));
  }
  oracle_run(op, in, out, *a->attrs);
  const int first_output = a->num_tensors - static_cast<int>(out.size());
  for (size_t k = 0; k < out.size(); ++k) {
    float* p = test::host_f32(a, first_output + static_cast<int>(k));
    for (size_t i = 0; i < out[k].values.size(); ++i) p[i] = static_cast<float>(out[k].values[i]);
    if (k == 0) p[0] = std::nextafter(p[0], INFINITY);
  }
  return POLYCHIP_OK;
}

class ExactInputsTest : public ::testing::Test {
 protected:
  ExactInputsTest()
      : runtime_(options()),
        device_(runtime_.device("cpu")),
        stream_(device_),
        ctx_(test::case_context(runtime_, device_, stream_, waivers_, "cpu")) {}
  static RuntimeOptions options() {
    RuntimeOptions o;
    o.builtin_adapters = {&polychip_cpu_adapter_get_api};
    return o;
  }
  CaseOutcome run(const std::string& id) { return run_case(parse_case_id(id), ctx_); }

  Runtime runtime_;
  Device device_;
  Stream stream_;
  WaiverList waivers_;
  CaseContext ctx_;
};

const char* const kExactCases[] = {"attention/f32/1x2x64x16/exact/seed=1",
                                   "attention/f32/2x2x64x32/exact+noncausal/seed=1",
                                   "attention/f16/1x2x16x16/exact+noncausal/seed=1",
                                   "attention/bf16/1x2x64x64/exact+noncausal/seed=1",
                                   "layernorm/f32/16x1024/exact/seed=1",
                                   "layernorm/bf16/16x64/exact/seed=1",
                                   "rmsnorm/f32/16x1023/exact/seed=1",
                                   "rmsnorm/f16/16x256/exact/seed=1"};

TEST_F(ExactInputsTest, CpuComputesTheExactResultAndTheCasesAreTrusted) {
  for (const char* id : kExactCases) {
    const CaseOutcome out = run(id);
    EXPECT_EQ(out.verdict, Verdict::kPass) << id << ": " << out.record.value("message", "");
    EXPECT_EQ(out.record["outputs"][0]["tolerance"]["mode"], "exact") << id;
    EXPECT_EQ(out.record["outputs"][0]["metrics"]["max_abs_error"], 0.0) << id;
  }
}

TEST_F(ExactInputsTest, EveryIntermediateIsExact) {
  // Attention: each row's o is one row of v it may see; lse takes two values.
  for (const char* id :
       {"attention/f32/2x2x64x32/exact+noncausal/seed=1", "attention/f32/1x2x64x16/exact/seed=1"}) {
    Problem p = build_problem(parse_case_id(id), kOracle);
    std::vector<HostTensor> out = p.outputs;
    oracle_run(*p.op, p.inputs, out, p.attrs);
    const int64_t s = p.spec.dims[2], dim = p.spec.dims[3];
    const auto& v = p.inputs[2].values;
    const auto& o = out[0].values;
    for (int64_t row = 0; row < element_count(out[1].shape); ++row) {
      const int64_t i = row % s, head = row - i;
      const int64_t visible = p.spec.has("noncausal") ? s : i + 1;
      bool found = false;
      for (int64_t j = 0; j < visible && !found; ++j)
        found = std::equal(o.begin() + row * dim, o.begin() + (row + 1) * dim,
                           v.begin() + (head + j) * dim);
      EXPECT_TRUE(found) << id << ": row " << row;
    }
    EXPECT_EQ(std::set<double>(out[1].values.begin(), out[1].values.end()).size(), 2u) << id;
  }
  // Layernorm: mean integer, rstd a power of two.
  Problem p = build_problem(parse_case_id("layernorm/f32/16x1024/exact/seed=1"), kOracle);
  std::vector<HostTensor> out = p.outputs;
  oracle_run(*p.op, p.inputs, out, p.attrs);
  std::set<double> rstd(out[2].values.begin(), out[2].values.end());
  EXPECT_GE(rstd.size(), 2u);
  for (double r : rstd) EXPECT_TRUE(std::has_single_bit(static_cast<uint64_t>(r * 4))) << r;
  for (double m : out[1].values) EXPECT_EQ(m, std::round(m));
}

TEST_F(ExactInputsTest, ShapesThatCannotBeExactAreRefused) {
  for (const char* id : {"attention/f32/1x1x64x11/exact/seed=1",  // D < 2 log2 S
                         "attention/f32/1x1x1x32/exact/seed=1",   // S < 2
                         "layernorm/f32/4x1023/exact/seed=1"}) {  // D odd
    const CaseOutcome out = run(id);
    EXPECT_EQ(out.verdict, Verdict::kFail) << id;
    EXPECT_NE(out.record.value("message", "").find("harness: cannot build the case"),
              std::string::npos)
        << id;
  }
}

TEST_F(ExactInputsTest, OneUlpOffPassesTheOrdinaryCasesAndFailsTheExactOnes) {
  for (const char* op : {"attention", "layernorm", "rmsnorm"})
    runtime_.dispatcher().patch(device_.device_type(), op, std::nullopt, &oracle_one_ulp_off,
                                "exact_inputs_test");
  for (const char* id : {"attention/f32/2x2x64x32/noncausal/seed=1", "layernorm/f32/16x1024/seed=1",
                         "rmsnorm/f32/16x1023/seed=1"}) {
    const CaseOutcome out = run(id);
    EXPECT_EQ(out.verdict, Verdict::kPass) << id << ": " << out.record.value("message", "");
  }
  for (const char* id :
       {"attention/f32/2x2x64x32/exact+noncausal/seed=1", "layernorm/f32/16x1024/exact/seed=1",
        "rmsnorm/f32/16x1023/exact/seed=1"}) {
    const CaseOutcome out = run(id);
    EXPECT_EQ(out.verdict, Verdict::kFail) << id;
    EXPECT_NE(out.record.value("message", "").find("1 of"), std::string::npos)
        << id << ": " << out.record.value("message", "");
  }
}

// Scores q_i . k_j / sqrt(D): each query's target beats every other key by
// at least 12,000 (exp of minus that is 0 even in long double) and by less
// than twice that (big is the smallest power of two that does it); causal
// rows pick a key they may see, noncausal rows any key; q and k are values
// of the dtype.
TEST(ExactInputs, EachQueryPicksOneVisibleKeyByTheVanishingMargin) {
  for (const char* id :
       {"attention/f32/2x2x64x32/exact+noncausal/seed=1", "attention/f32/1x2x64x16/exact/seed=1",
        "attention/f16/1x2x16x16/exact+noncausal/seed=1",
        "attention/bf16/1x3x5x7/exact+noncausal/seed=2",  // S, D not powers of two
        "attention/f32/1x1x2x2/exact/seed=3"}) {          // the smallest S and D
    const Problem p = build_problem(parse_case_id(id), kOracle);
    const bool causal = !p.spec.has("noncausal");
    const int64_t heads = p.spec.dims[0] * p.spec.dims[1], s = p.spec.dims[2], dim = p.spec.dims[3];
    const auto& q = p.inputs[0].values;
    const auto& k = p.inputs[1].values;
    double min_margin = std::numeric_limits<double>::infinity();
    bool past_the_diagonal = false;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < s; ++i) {
        std::vector<double> score(static_cast<size_t>(s));
        for (int64_t j = 0; j < s; ++j)
          for (int64_t c = 0; c < dim; ++c)
            score[static_cast<size_t>(j)] += q[static_cast<size_t>((h * s + i) * dim + c)] *
                                             k[static_cast<size_t>((h * s + j) * dim + c)] /
                                             std::sqrt(static_cast<double>(dim));
        const auto best = std::max_element(score.begin(), score.end());
        const int64_t target = best - score.begin();
        double runner_up = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < s; ++j)
          if (j != target) runner_up = std::max(runner_up, score[static_cast<size_t>(j)]);
        min_margin = std::min(min_margin, *best - runner_up);
        if (causal) {
          EXPECT_LE(target, i) << id << ": head " << h << ", row " << i;
        }
        past_the_diagonal |= target > i;
      }
    EXPECT_GE(min_margin, 12000) << id;
    EXPECT_LT(min_margin, 24000) << id;
    if (!causal) {
      EXPECT_TRUE(past_the_diagonal) << id;
    }
    for (const auto* t : {&q, &k})
      for (double x : *t) ASSERT_EQ(round_to_dtype(x, p.inputs[0].dtype), x) << id;
  }
}

// The smallest shapes that can be exact build; one less is refused, naming
// the head dimension it needs (2 ceil(log2 S)) or the dtype q overflows.
TEST(ExactInputs, RefusalsNameTheHeadDimensionNeeded) {
  for (const char* id :
       {"attention/f32/1x1x2x2/exact/seed=1", "attention/f32/1x1x64x12/exact/seed=1",
        "attention/f32/1x1x65x14/exact/seed=1", "attention/f16/1x1x64x24/exact/seed=1",
        "layernorm/f32/3x2/exact/seed=1", "rmsnorm/f32/3x1/exact/seed=1"})
    EXPECT_NO_THROW(build_problem(parse_case_id(id), kOracle)) << id;
  const auto message = [](const char* id) {
    try {
      build_problem(parse_case_id(id), kOracle);
    } catch (const Error& e) {
      return e.message();
    }
    return std::string("(built)");
  };
  const struct {
    const char* id;
    const char* says;
  } refused[] = {
      {"attention/f32/1x1x64x11/exact/seed=1", "D >= 12 (2 ceil(log2 S))"},
      {"attention/f32/1x1x65x13/exact/seed=1", "D >= 14 (2 ceil(log2 S))"},
      {"attention/f32/1x1x2x1/exact/seed=1", "D >= 2 (2 ceil(log2 S))"},
      {"attention/f32/1x1x1x32/exact/seed=1", "S >= 2"},
      // 2 big = 65,536 is past f16's largest value (it would become Inf).
      {"attention/f16/1x1x64x16/exact/seed=1", "q values of 65536 (2 big), past the largest f16"},
      {"layernorm/f32/3x5/exact/seed=1", "even row length D"},
  };
  for (const auto& r : refused)
    EXPECT_NE(message(r.id).find(r.says), std::string::npos) << r.id << ": " << message(r.id);
}

// Each row is m + d or m - d, d one of 1/2, 1, 2, 4: half of each sign and
// m a small integer for layernorm, either sign and m = 0 for rmsnorm; gamma
// and beta are small integers and eps is 2^-100.
TEST(ExactInputs, NormRowsAreAnIntegerMeanPlusOrMinusAPowerOfTwo) {
  for (const char* id : {"layernorm/f32/32x64/exact/seed=1", "rmsnorm/f16/32x63/exact/seed=2"}) {
    const Problem p = build_problem(parse_case_id(id), kOracle);
    const bool layernorm = p.spec.op == "layernorm";
    const int64_t n = p.spec.dims[0], dim = p.spec.dims[1];
    EXPECT_EQ(p.attrs.floats[attr::kEps], 0x1p-100) << id;
    std::set<double> means, spreads;
    int64_t above = 0;
    for (int64_t r = 0; r < n; ++r) {
      const auto row = p.inputs[0].values.begin() + r * dim;
      const auto [lo, hi] = std::minmax_element(row, row + dim);
      const double m = layernorm ? (*lo + *hi) / 2 : 0, spread = std::fabs(*row - m);
      means.insert(m);
      spreads.insert(spread);
      int64_t row_above = 0;
      for (auto x = row; x < row + dim; ++x) {
        EXPECT_EQ(std::fabs(*x - m), spread) << id << ": row " << r;
        row_above += *x > m;
      }
      EXPECT_TRUE(!layernorm || row_above == dim / 2) << id << ": row " << r;
      above += row_above;
    }
    EXPECT_EQ(spreads, (std::set<double>{0.5, 1, 2, 4})) << id;
    if (layernorm) {
      EXPECT_GE(means.size(), 3u) << id;
      for (double m : means) EXPECT_TRUE(m == std::round(m) && std::fabs(m) <= 3) << m;
    } else {
      EXPECT_NEAR(static_cast<double>(above) / static_cast<double>(n * dim), 0.5, 0.1) << id;
    }
    for (size_t t = 1; t < p.inputs.size(); ++t) {
      ASSERT_EQ(p.inputs[t].values.size(), static_cast<size_t>(dim)) << id;
      std::set<double> distinct(p.inputs[t].values.begin(), p.inputs[t].values.end());
      EXPECT_GE(distinct.size(), 5u) << id;
      for (double g : distinct) EXPECT_TRUE(g == std::round(g) && std::fabs(g) <= 3) << g;
    }
  }
}

// Only "exact" attention, layernorm and rmsnorm take these inputs (gemm's
// and the reductions' exact inputs are the value generator's).
TEST(ExactInputs, OnlyExactAttentionAndNormsTakeThem) {
  const auto exact = [](const char* id) {
    return has_exact_inputs(build_problem(parse_case_id(id), kOracle));
  };
  EXPECT_TRUE(exact("attention/f32/1x1x4x4/exact/seed=1"));
  EXPECT_TRUE(exact("layernorm/f32/4x8/exact/seed=1"));
  EXPECT_TRUE(exact("rmsnorm/f32/4x8/exact/seed=1"));
  EXPECT_FALSE(exact("attention/f32/1x1x4x4/seed=1"));
  EXPECT_FALSE(exact("layernorm/f32/4x8/seed=1"));
  EXPECT_FALSE(exact("gemm/f32/4x4x4/exact/seed=1"));
  EXPECT_FALSE(exact("reduce_sum/f32/4x8/exact/seed=1"));
}

// lse (the target's score r big L / sqrt(D)) is exact when sqrt(D) is a power
// of two; o and every output of rmsnorm always are.
TEST(ExactInputs, LseIsExactOnlyWhenSqrtDIsAPowerOfTwo) {
  const struct {
    int64_t dim;
    bool lse_exact;
  } dims[] = {{4, true}, {16, true}, {64, true}, {8, false}, {32, false}, {12, false}, {6, false}};
  for (const auto& d : dims) {
    const Problem p =
        build_problem(CaseSpec{"attention", DType::kF32, {1, 1, 4, d.dim}, {"exact"}, 1}, kOracle);
    EXPECT_EQ(exact_case_tolerance(p, 0)->mode, ToleranceMode::kExact) << d.dim;
    EXPECT_EQ(exact_case_tolerance(p, 1).has_value(), d.lse_exact) << d.dim;
  }
  const Problem p = build_problem(parse_case_id("rmsnorm/f32/4x8/exact/seed=1"), kOracle);
  for (size_t k = 0; k < 2; ++k) EXPECT_EQ(exact_case_tolerance(p, k)->mode, ToleranceMode::kExact);
}

// Layernorm's y and rstd are exact; its mean is held to Welford's rounding,
// 2 sqrt(D) u max|x| (u of the mean's dtype, f32).
TEST(ExactInputs, LayernormsMeanIsHeldToWelfordsRounding) {
  const Problem p = build_problem(parse_case_id("layernorm/bf16/16x64/exact/seed=1"), kOracle);
  EXPECT_EQ(exact_case_tolerance(p, 0)->mode, ToleranceMode::kExact);
  EXPECT_EQ(exact_case_tolerance(p, 2)->mode, ToleranceMode::kExact);
  const Tolerance mean = *exact_case_tolerance(p, 1);
  double largest = 0;
  for (double x : p.inputs[0].values) largest = std::max(largest, std::fabs(x));
  EXPECT_GT(largest, 1);
  EXPECT_EQ(mean.mode, ToleranceMode::kClose);
  EXPECT_EQ(mean.atol, 2 * 8 * 0x1p-24 * largest);
  EXPECT_EQ(mean.rtol, 0);
  EXPECT_EQ(mean.atol_factor, 0);
}

// Welford's algorithm (one thread folding each whole row: the largest
// rounding) on f32 rows, rounded to f32: its mean passes the exact
// layernorm cases, and a mean one element short of the row fails them.
polychip_status welford_layernorm(const polychip_kernel_args* a, bool drop_last) {
  const int64_t n = a->tensors[0].shape[0], d = a->tensors[0].shape[1];
  const float *x = test::host_f32(a, 0), *gamma = test::host_f32(a, 1),
              *beta = test::host_f32(a, 2);
  float *y = test::host_f32(a, 3), *mean_out = test::host_f32(a, 4),
        *rstd_out = test::host_f32(a, 5);
  if (!x || !gamma || !beta || !y || !mean_out || !rstd_out) return POLYCHIP_UNSUPPORTED;
  for (int64_t r = 0; r < n; ++r) {
    const float* row = x + r * d;
    float mean = 0, m2 = 0, count = 0;
    for (int64_t j = 0; j < d - (drop_last ? 1 : 0); ++j) {
      count += 1;
      const float delta = row[j] - mean;
      mean += delta / count;
      m2 += delta * (row[j] - mean);
    }
    // The statistics y and rstd use are the exact ones: only the mean a
    // kernel writes out is under test.
    double exact_mean = 0, exact_m2 = 0;
    for (int64_t j = 0; j < d; ++j) exact_mean += row[j];
    exact_mean /= static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j) exact_m2 += (row[j] - exact_mean) * (row[j] - exact_mean);
    const double rstd =
        1 / std::sqrt(exact_m2 / static_cast<double>(d) + a->attrs->floats[attr::kEps]);
    for (int64_t j = 0; j < d; ++j)
      y[r * d + j] = static_cast<float>((row[j] - exact_mean) * rstd * gamma[j] + beta[j]);
    mean_out[r] = mean;
    rstd_out[r] = static_cast<float>(rstd);
  }
  return POLYCHIP_OK;
}
polychip_status welford_mean(const polychip_kernel_args* a) { return welford_layernorm(a, false); }
polychip_status welford_mean_one_element_short(const polychip_kernel_args* a) {
  return welford_layernorm(a, true);
}

TEST_F(ExactInputsTest, AWelfordMeanPassesAndAMeanOneElementShortFails) {
  const char* const ids[] = {"layernorm/f32/2x4096/exact/seed=2",
                             "layernorm/f32/16x1024/exact/seed=1"};
  runtime_.dispatcher().patch(device_.device_type(), "layernorm", std::nullopt, &welford_mean,
                              "exact_inputs_test");
  for (const char* id : ids) {
    const CaseOutcome out = run(id);
    EXPECT_EQ(out.verdict, Verdict::kPass) << id << ": " << out.record.value("message", "");
  }
  runtime_.dispatcher().patch(device_.device_type(), "layernorm", std::nullopt,
                              &welford_mean_one_element_short, "exact_inputs_test");
  for (const char* id : ids) {
    const CaseOutcome out = run(id);
    EXPECT_EQ(out.verdict, Verdict::kFail) << id;
    EXPECT_NE(out.record.value("message", "").find("of 'mean' beyond tolerance"), std::string::npos)
        << id << ": " << out.record.value("message", "");
  }
}

}  // namespace
}  // namespace polychip::precision
