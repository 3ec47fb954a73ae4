// Every case of every level builds into a problem the op contract accepts,
// with inputs valid for the op.
#include "problem.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <gtest/gtest.h>

#include "case_list.hpp"
#include "polychip/error.hpp"
#include "precision/oracle/oracle.hpp"
#include "value_generator.hpp"

namespace polychip::precision {
namespace {

// The contract's view of a problem: row-major tensors, each in its own
// (fake, never dereferenced) memory.
std::string validate(const Problem& p) {
  std::vector<polychip_tensor> ts;
  std::vector<HostTensor> all = p.inputs;
  all.insert(all.end(), p.outputs.begin(), p.outputs.end());
  static char fake_memory[POLYCHIP_MAX_OP_TENSORS];
  for (size_t k = 0; k < all.size(); ++k) {
    polychip_tensor t{};
    t.struct_size = sizeof t;
    t.dtype = static_cast<polychip_dtype>(all[k].dtype);
    t.rank = static_cast<int32_t>(all[k].shape.size());
    Shape strides = row_major_strides(all[k].shape);
    for (int d = 0; d < t.rank; ++d) {
      t.shape[d] = all[k].shape[static_cast<size_t>(d)];
      t.strides[d] = strides[static_cast<size_t>(d)];
    }
    t.memory = reinterpret_cast<polychip_memory*>(&fake_memory[k]);
    ts.push_back(t);
  }
  return validate_call(*p.op, OpCall{ts, &p.attrs});
}

// (full only adds larger problems and seeds of the same kinds.)
TEST(Problem, EveryCaseOfQuickAndStandardBuildsAndValidates) {
  for (Level level : {Level::kQuick, Level::kStandard}) {
    auto cases = cases_for_level(level);
    ASSERT_FALSE(cases.empty());
    std::set<std::string> ids;
    for (const auto& spec : cases) {
      SCOPED_TRACE(case_id(spec));
      EXPECT_TRUE(ids.insert(case_id(spec)).second) << "duplicate case id";
      Problem p = build_problem(spec, kOracle);
      EXPECT_EQ(p.inputs.size() + p.outputs.size(), p.op->tensors.size());
      for (const auto& t : p.inputs)
        EXPECT_EQ(t.values.size(), static_cast<size_t>(element_count(t.shape)));
      EXPECT_EQ(validate(p), "");
      // The id alone rebuilds the same problem.
      Problem again = build_problem(parse_case_id(case_id(spec)), kOracle);
      for (size_t k = 0; k < p.inputs.size(); ++k)
        for (size_t i = 0; i < p.inputs[k].values.size(); ++i) {
          double a = p.inputs[k].values[i], b = again.inputs[k].values[i];
          ASSERT_TRUE(a == b || (std::isnan(a) && std::isnan(b)));
        }
    }
  }
}

TEST(Problem, FullListHasUniqueParsableIds) {
  std::set<std::string> ids;
  for (const auto& spec : cases_for_level(Level::kFull)) {
    EXPECT_TRUE(ids.insert(case_id(spec)).second) << case_id(spec);
    EXPECT_EQ(case_id(parse_case_id(case_id(spec))), case_id(spec));
  }
}

TEST(Problem, QuickCoversEveryOpOfTheContractInF32F16BF16) {
  std::set<std::pair<std::string, DType>> covered;
  for (const auto& c : cases_for_level(Level::kQuick)) covered.insert({c.op, c.dtype});
  for (const auto& op : op_contract()) {
    if (std::string_view(op.name) == "cast") continue;  // T is the source dtype
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16})
      EXPECT_TRUE(covered.count({op.name, dt})) << op.name << " " << dtype_name(dt);
  }
}

TEST(Problem, InputsRespectTheOpsDomains) {
  auto p = build_problem(parse_case_id("log/f32/1000/wide/seed=3"), kOracle);
  for (double v : p.inputs[0].values) EXPECT_GE(v, 0);
  p = build_problem(parse_case_id("embedding/f32/64x10x8/seed=3"), kOracle);
  for (double id : p.inputs[0].values) EXPECT_TRUE(id >= 0 && id < 10);
  p = build_problem(parse_case_id("cross_entropy/bf16/16x7/i32/seed=3"), kOracle);
  EXPECT_EQ(p.inputs[1].dtype, DType::kI32);
  for (double id : p.inputs[1].values) EXPECT_TRUE(id >= 0 && id < 7);
  p = build_problem(parse_case_id("adamw/f32/100/seed=3"), kOracle);
  for (double v : p.inputs[3].values) EXPECT_GE(v, 0);  // v state
  EXPECT_GE(p.attrs.ints[attr::kStep], 1);
  p = build_problem(parse_case_id("softmax_backward/f32/4x50/seed=3"), kOracle);
  for (int r = 0; r < 4; ++r) {
    double sum = 0;
    for (int c = 0; c < 50; ++c) sum += p.inputs[1].values[static_cast<size_t>(r * 50 + c)];
    EXPECT_NEAR(sum, 1.0, 1e-5);  // y is a softmax output
  }
  p = build_problem(parse_case_id("gemm/f32/4x5x6/seed=3"), kOracle);
  for (double c : p.inputs[2].values) EXPECT_TRUE(std::isnan(c));  // beta = 0: c must be unread
  EXPECT_EQ(p.reduce_len, 6);
  p = build_problem(parse_case_id("gemm/f32/2x4x5x6/ta+beta/seed=3"), kOracle);
  EXPECT_EQ(p.inputs[0].shape, (Shape{2, 6, 4}));
  EXPECT_EQ(p.attrs.floats[attr::kBeta], 0.75);
}

TEST(Problem, ExhaustiveAndExactIntegerInputs) {
  // exhaustive: every finite f16 / bf16 value once (non-finite patterns -> 0).
  for (DType dt : {DType::kF16, DType::kBF16}) {
    auto p = build_problem(CaseSpec{"tanh", dt, {65536}, {"exhaustive"}, 1}, kOracle);
    std::set<double> distinct(p.inputs[0].values.begin(), p.inputs[0].values.end());
    const size_t non_finite = dt == DType::kF16 ? 2048 : 256;  // exponent all ones
    // +0 and -0 compare equal; the non-finite patterns all became 0.
    EXPECT_EQ(distinct.size(), 65536 - non_finite - 1) << dtype_name(dt);
    EXPECT_EQ(p.inputs[0].values[1], float_format(dt).min_subnormal());
  }
  EXPECT_THROW(build_problem(parse_case_id("tanh/f32/16/exhaustive/seed=1"), kOracle), Error);
  // exact: small integers with zeros.
  auto p = build_problem(parse_case_id("gemm/f32/8x8x64/exact/seed=2"), kOracle);
  size_t zeros = 0;
  for (double v : p.inputs[0].values) {
    EXPECT_TRUE(v == std::trunc(v) && std::fabs(v) <= 3) << v;
    zeros += v == 0;
  }
  EXPECT_GT(zeros, p.inputs[0].values.size() / 5);
}

// layernorm/rmsnorm backward's dx is measured against its terms,
// max |rstd_i * dy_ij * gamma_j|; other ops have no such scale. With D = 2
// the terms dwarf dx.
TEST(Problem, NormBackwardsCarryTheirTermsMagnitude) {
  for (const char* id : {"layernorm_backward/f32/34x2/seed=101", "rmsnorm_backward/f32/8x64/seed=1",
                         "layernorm_backward/bf16/3x5/seed=2"}) {
    const Problem p = build_problem(parse_case_id(id), kOracle);
    const bool layernorm = p.spec.op == "layernorm_backward";
    const HostTensor& rstd = p.inputs[layernorm ? 4 : 3];
    const int64_t n = p.spec.dims[0], d = p.spec.dims[1];
    double terms = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < d; ++j)
        terms = std::max(terms, std::fabs(rstd.values.at(static_cast<size_t>(i)) *
                                          p.inputs[0].values.at(static_cast<size_t>(i * d + j)) *
                                          p.inputs[2].values.at(static_cast<size_t>(j))));
    ASSERT_EQ(p.terms_magnitude.size(), 1u) << id;
    EXPECT_EQ(p.terms_magnitude[0], terms) << id;
  }
  const Problem two = build_problem(parse_case_id("layernorm_backward/f32/34x2/seed=101"), kOracle);
  std::vector<HostTensor> dx = two.outputs;
  kOracle(*two.op, two.inputs, dx, two.attrs);
  double largest_dx = 0;
  for (double v : dx[0].values) largest_dx = std::max(largest_dx, std::fabs(v));
  EXPECT_GT(two.terms_magnitude[0], 10 * largest_dx);
  EXPECT_TRUE(
      build_problem(parse_case_id("rmsnorm/f32/8x64/seed=3"), kOracle).terms_magnitude.empty());
}

// layernorm's y is x * rstd * gamma less mean * rstd * gamma: with offset
// inputs (1000 + N(0, 1)) those terms are hundreds of times y, and an f32
// mean's rounding shows at their scale; on centred inputs they are y's size.
// (rstd's terms: problem.cpp layernorm_terms.)
TEST(Problem, LayernormCarriesTheTermsOfItsOutput) {
  auto ratio = [](const char* id) {
    const Problem p = build_problem(parse_case_id(id), kOracle);
    std::vector<HostTensor> out = p.outputs;
    kOracle(*p.op, p.inputs, out, p.attrs);
    double largest_y = 0;
    for (double v : out[0].values) largest_y = std::max(largest_y, std::fabs(v));
    EXPECT_EQ(p.terms_magnitude.size(), 3u) << id;  // y, mean, rstd
    return p.terms_magnitude.at(0) / largest_y;
  };
  EXPECT_GT(ratio("layernorm/f32/16x256/offset/seed=1"), 100);
  EXPECT_LT(ratio("layernorm/f32/16x256/seed=1"), 2);
}

TEST(Problem, GemmSpecialValuesStayInRowAndColumnZero) {
  // K = 64 holds every special value (NaN, Inf included) in row 0 of op(a)
  // and column 0 of op(b), transposed or not: exactly row 0 and column 0 of
  // the result are not finite.
  for (const char* id :
       {"gemm/f32/8x6x64/special/seed=1", "gemm/f32/8x6x64/ta+tb+special/seed=1"}) {
    auto p = build_problem(parse_case_id(id), kOracle);
    std::vector<HostTensor> out = p.outputs;
    kOracle(*p.op, p.inputs, out, p.attrs);
    for (size_t i = 0; i < 8; ++i)
      for (size_t j = 0; j < 6; ++j)
        EXPECT_EQ(std::isfinite(out[0].values[i * 6 + j]), i > 0 && j > 0)
            << id << ": " << i << ", " << j;
  }
}

TEST(Problem, LayoutAttributeAndIdVariantsShapeTheInputs) {
  // broadcast: every row of b is its first row (it is laid out with stride 0).
  auto p = build_problem(parse_case_id("mul/f32/5x7/broadcast/seed=3"), kOracle);
  EXPECT_TRUE(p.broadcast);
  for (size_t i = 7; i < 35; ++i) EXPECT_EQ(p.inputs[1].values[i], p.inputs[1].values[i % 7]);
  EXPECT_NE(p.inputs[0].values[0], p.inputs[0].values[7]);
  // eps: a non-default eps reaches the attributes.
  p = build_problem(parse_case_id("rmsnorm/f32/4x8/eps/seed=3"), kOracle);
  EXPECT_EQ(p.attrs.floats[attr::kEps], 0.5);
  EXPECT_NE(
      build_problem(parse_case_id("rmsnorm/f32/4x8/seed=3"), kOracle).attrs.floats[attr::kEps],
      0.5);
  // repeated: the edge ids 0 and V-1, each several times.
  p = build_problem(parse_case_id("embedding_backward/f32/16x9x4/repeated/seed=3"), kOracle);
  EXPECT_EQ(std::count(p.inputs[0].values.begin(), p.inputs[0].values.end(), 0.0) >= 4, true);
  EXPECT_EQ(std::count(p.inputs[0].values.begin(), p.inputs[0].values.end(), 8.0) >= 4, true);
}

// Attributes each id flag sets, and what they are without it.
TEST(Problem, IdFlagsSetTheirAttributes) {
  const auto attrs = [](const char* id) { return build_problem(parse_case_id(id), kOracle).attrs; };
  auto a = attrs("gemm/f32/4x5x6/ta+tb+alpha+beta+tf32/seed=1");
  EXPECT_EQ(a.ints[attr::kTransA], 1);
  EXPECT_EQ(a.ints[attr::kTransB], 1);
  EXPECT_EQ(a.ints[attr::kMathMode], 1);
  EXPECT_EQ(a.floats[attr::kAlpha], 0.5);
  a = attrs("gemm/f32/4x5x6/rpr/seed=1");
  EXPECT_EQ(a.ints[attr::kTransA] + a.ints[attr::kTransB], 0);
  EXPECT_EQ(a.ints[attr::kMathMode], 2);
  EXPECT_EQ(a.floats[attr::kAlpha], 1.0);
  EXPECT_EQ(a.floats[attr::kBeta], 0.0);
  EXPECT_EQ(attrs("gemm/f32/4x5x6/seed=1").ints[attr::kMathMode], 0);
  EXPECT_EQ(attrs("reduce_sum/f32/4x5/axis0/seed=1").ints[attr::kAxis], 0);
  EXPECT_EQ(attrs("softmax/f32/4x5/seed=1").ints[attr::kAxis], -1);
  EXPECT_EQ(attrs("gelu_backward/f32/8/tanh/seed=1").ints[attr::kGeluApproximate], 1);
  EXPECT_EQ(attrs("gelu/f32/8/seed=1").ints[attr::kGeluApproximate], 0);
  a = attrs("attention/f32/1x2x3x16/noncausal/seed=1");
  EXPECT_EQ(a.floats[attr::kScale], 0.25);  // 1 / sqrt(D)
  EXPECT_EQ(a.ints[attr::kCausal], 0);
  EXPECT_EQ(attrs("attention/f32/1x2x3x16/seed=1").ints[attr::kCausal], 1);
  EXPECT_EQ(attrs("layernorm/f32/4x8/eps/seed=1").floats[attr::kEps], 0.5);
  EXPECT_EQ(attrs("rotary_embedding/f32/2x1x4/inverse/seed=1").ints[attr::kInverse], 1);
  EXPECT_EQ(attrs("rotary_embedding/f32/2x1x4/seed=1").ints[attr::kInverse], 0);
  // adamw: step 1 + seed % 50 (never 0); "attrs" moves every hyperparameter.
  EXPECT_EQ(attrs("adamw/f32/8/seed=49").ints[attr::kStep], 50);
  EXPECT_EQ(attrs("adamw/f32/8/seed=50").ints[attr::kStep], 1);
  a = attrs("adamw/f32/8/attrs/seed=1");
  const polychip_op_attrs defaults = default_attrs(*find_op("adamw"));
  for (int k : {attr::kLr, attr::kBeta1, attr::kBeta2, attr::kAdamEps, attr::kWeightDecay})
    EXPECT_NE(a.floats[k], defaults.floats[k]) << k;
  EXPECT_EQ(a.ints[attr::kStep], 1000);
  // fill's special value is special_values()[seed % 15]: 9 is +Inf.
  EXPECT_EQ(attrs("fill/f32/8/special/seed=9").floats[attr::kFillValue],
            std::numeric_limits<double>::infinity());
}

// How long the reduction behind one output element is, per op family.
TEST(Problem, ReduceLengthIsTheLongestReductionOfTheOp) {
  const auto len = [](const char* id) {
    return build_problem(parse_case_id(id), kOracle).reduce_len;
  };
  EXPECT_EQ(len("gemm/f32/2x4x5x6/seed=1"), 6);      // K
  EXPECT_EQ(len("reduce_sum/f32/3x4x5/seed=1"), 5);  // the last axis
  EXPECT_EQ(len("reduce_sum/f32/3x4x5/axis0/seed=1"), 3);
  EXPECT_EQ(len("log_softmax/f32/3x7/seed=1"), 7);
  EXPECT_EQ(len("layernorm/f32/9x4/seed=1"), 4);         // D
  EXPECT_EQ(len("rmsnorm_backward/f32/9x4/seed=1"), 9);  // dgamma sums N
  EXPECT_EQ(len("rmsnorm_backward/f32/4x9/seed=1"), 9);
  EXPECT_EQ(len("cross_entropy/f32/3x11/seed=1"), 11);  // C
  EXPECT_EQ(len("embedding_backward/f32/12x5x3/seed=1"), 12);
  EXPECT_EQ(len("embedding/f32/12x5x3/seed=1"), 1);
  EXPECT_EQ(len("attention/f32/1x2x7x4/seed=1"), 11);  // S + D
  EXPECT_EQ(len("exp/f32/5x6/seed=1"), 1);
}

// log, sqrt and rsqrt get positive inputs by default and |wide| with "wide".
TEST(Problem, RootAndLogInputsStayInTheirDomain) {
  for (const char* op : {"log", "sqrt", "rsqrt"})
    for (const char* variant : {"", "wide/"}) {
      const std::string id = std::string(op) + "/f32/500/" + variant + "seed=2";
      const auto p = build_problem(parse_case_id(id), kOracle);
      EXPECT_GE(*std::min_element(p.inputs[0].values.begin(), p.inputs[0].values.end()), 0) << id;
    }
  // Other unary ops keep both signs.
  const auto p = build_problem(parse_case_id("tanh/f32/500/seed=2"), kOracle);
  EXPECT_LT(*std::min_element(p.inputs[0].values.begin(), p.inputs[0].values.end()), 0);
}

// exp's wide inputs reach past both ends: results that underflow to 0 and overflow to Inf.
TEST(Problem, ExpWideInputsCrossUnderflowAndOverflow) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    const auto p = build_problem(CaseSpec{"exp", dt, {2000}, {"wide"}, 4}, kOracle);
    const auto [lo, hi] = std::minmax_element(p.inputs[0].values.begin(), p.inputs[0].values.end());
    const FloatFormat f = float_format(dt);
    EXPECT_LT(*lo, std::log(f.min_subnormal())) << dtype_name(dt);
    EXPECT_GT(*lo, 1.03 * std::log(f.min_subnormal())) << dtype_name(dt);
    EXPECT_GT(*hi, std::log(f.max_finite)) << dtype_name(dt);
    EXPECT_LT(*hi, 1.03 * std::log(f.max_finite)) << dtype_name(dt);
  }
}

// cos[s, j] and sin[s, j] of the angle s * 10000^(-2j / D).
TEST(Problem, RotaryTablesHoldTheAnglesOfEachPosition) {
  const auto p = build_problem(parse_case_id("rotary_embedding/f32/5x2x8/seed=1"), kOracle);
  ASSERT_EQ(p.inputs[1].shape, (Shape{5, 4}));
  for (int s = 0; s < 5; ++s)
    for (int j = 0; j < 4; ++j) {
      const double theta = s * std::pow(10000.0, -2.0 * j / 8);
      EXPECT_FLOAT_EQ(p.inputs[1].values[static_cast<size_t>(s * 4 + j)], std::cos(theta));
      EXPECT_FLOAT_EQ(p.inputs[2].values[static_cast<size_t>(s * 4 + j)], std::sin(theta));
    }
}

// A zero dimension gives empty tensors, not a crash (these divided by
// zero and wrote past empty buffers).
TEST(Problem, ZeroSizedBroadcastAndSpecialGemmBuildEmptyTensors) {
  for (const char* id : {"add/f32/0x4/broadcast/seed=1", "gemm/f32/0x4x8/special/seed=1",
                         "gemm/f32/4x0x8/ta+tb+special/seed=1"}) {
    const auto p = build_problem(parse_case_id(id), kOracle);
    EXPECT_EQ(p.outputs[0].shape[0] * p.outputs[0].shape[1], 0) << id;
  }
}

// cast's output dtype: "to=<dtype>", else bf16 from f32 and f32 from the others.
TEST(Problem, CastConvertsToTheToDtypeOrBetweenF32AndBF16) {
  const auto dtypes = [](const char* id) {
    const auto p = build_problem(parse_case_id(id), kOracle);
    return std::pair{p.inputs[0].dtype, p.outputs[0].dtype};
  };
  EXPECT_EQ(dtypes("cast/f32/8/seed=1"), std::pair(DType::kF32, DType::kBF16));
  EXPECT_EQ(dtypes("cast/bf16/8/seed=1"), std::pair(DType::kBF16, DType::kF32));
  EXPECT_EQ(dtypes("cast/f64/8/seed=1"), std::pair(DType::kF64, DType::kF32));
  EXPECT_EQ(dtypes("cast/f32/8/to=f16/seed=1"), std::pair(DType::kF32, DType::kF16));
}

TEST(Problem, TensorsAreNamedAsTheContractNamesThem) {
  // layernorm: inputs x, gamma, beta; outputs y, mean, rstd.
  auto p = build_problem(parse_case_id("layernorm/f32/4x8/seed=1"), kOracle);
  EXPECT_EQ(tensor_name(p, 1), "gamma");
  EXPECT_EQ(output_name(p, 0), "y");
  EXPECT_EQ(output_name(p, 2), "rstd");
  EXPECT_EQ(tensor_name(p, 6), "#6");
}

// Why building the case `id` was refused ("" if it was not).
std::string refusal(const std::string& id, HostOpFn oracle = kOracle) {
  try {
    build_problem(parse_case_id(id), oracle);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << id;
    return e.message();
  }
  return "";
}

TEST(Problem, InvalidSpecsAreRefusedNamingTheProblem) {
  EXPECT_NE(refusal("rotary_embedding/f32/4x2x5/seed=1").find("even"), std::string::npos);
  EXPECT_NE(refusal("cast/f32/4/to=f99/seed=1").find("f99"), std::string::npos);
  EXPECT_NE(refusal("exp/f32/4x4/broadcast/seed=1").find("binary"), std::string::npos);
  EXPECT_NE(refusal("add/f32/16/broadcast/seed=1").find("rank >= 2"), std::string::npos);
  // broadcast needs exactly (a, b, out): not gemm's (a, b, c, y), not a
  // unary backward's (dy, x, dx).
  EXPECT_NE(refusal("gemm/f32/4x4x4/broadcast/seed=1").find("binary"), std::string::npos);
  EXPECT_NE(refusal("gelu_backward/f32/4x4/broadcast/seed=1").find("binary"), std::string::npos);
  EXPECT_NE(refusal("add/f32/4x4/strided+broadcast/seed=1").find("not strided"), std::string::npos);
  EXPECT_NE(refusal("exp/f32/scalar/seed=1").find("at least one dimension"), std::string::npos);
  EXPECT_NE(refusal("nosuchop/f32/4/seed=1").find("unknown op 'nosuchop'"), std::string::npos);
  // Whole messages: the case's id, then why (the op first, then what it takes).
  EXPECT_EQ(refusal("exp/i32/4/seed=1"), "case 'exp/i32/4/seed=1': exp does not take dtype i32");
  EXPECT_EQ(refusal("gemm/f32/4x4/seed=1"),
            "case 'gemm/f32/4x4/seed=1': gemm takes dims MxNxK or BxMxNxK");
  EXPECT_EQ(refusal("layernorm/f32/4x4/strided/seed=1"),
            "case 'layernorm/f32/4x4/strided/seed=1': layernorm (norm) takes only contiguous "
            "tensors");
}

// The backward cases' saved inputs are the oracle's forward results: without
// an oracle they are refused naming that forward op (the whole message: the
// case's id, then why). Other cases need none.
TEST(Problem, DerivedInputsWithoutAnOracleAreRefusedNamingTheForwardOp) {
  const std::pair<std::string, std::string> cases[] = {
      {"softmax_backward/f32/4x8/seed=1", "softmax"},
      {"log_softmax_backward/f32/4x8/seed=1", "log_softmax"},
      {"layernorm_backward/f32/4x8/seed=1", "layernorm"},
      {"rmsnorm_backward/f32/4x8/seed=1", "rmsnorm"},
      {"attention_backward/f32/1x2x6x8/seed=1", "attention"}};
  for (const auto& [id, forward] : cases)
    EXPECT_EQ(refusal(id, nullptr),
              fmt::format("case '{}': deriving inputs needs the oracle's {}", id, forward));
  EXPECT_EQ(refusal("add/f32/4x4/broadcast/seed=1", nullptr), "");
}

// Largest |value| of a tensor.
double max_abs(const HostTensor& t) {
  double m = 0;
  for (double v : t.values) m = std::max(m, std::fabs(v));
  return m;
}

bool has_negative(const HostTensor& t) {
  return std::any_of(t.values.begin(), t.values.end(), [](double v) { return v < 0; });
}

std::vector<HostTensor> inputs_of(const char* id) {
  return build_problem(parse_case_id(id), kOracle).inputs;
}

// The case's distribution reaches the data inputs (x, both operands of a
// binary op, logits, weight, q k v, a param); dy, gamma, beta, dloss and
// gemm's c stay normal. "wide" reaches 2^63 in f32, far past any normal draw.
TEST(Problem, TheDistributionReachesTheDataInputsOnly) {
  constexpr double kPastNormal = 1e6, kNormal = 10;
  auto in = inputs_of("add/f32/400/wide/seed=1");
  EXPECT_GT(max_abs(in[0]), kPastNormal);
  EXPECT_GT(max_abs(in[1]), kPastNormal);
  in = inputs_of("gelu_backward/f32/400/wide/seed=1");  // dy, x
  EXPECT_LT(max_abs(in[0]), kNormal);
  EXPECT_GT(max_abs(in[1]), kPastNormal);
  in = inputs_of("layernorm/f32/4x100/wide/seed=1");  // x, gamma, beta
  EXPECT_GT(max_abs(in[0]), kPastNormal);
  EXPECT_LT(std::max(max_abs(in[1]), max_abs(in[2])), kNormal);
  in = inputs_of("layernorm_backward/f32/4x100/wide/seed=1");  // dy, x, gamma, mean, rstd
  EXPECT_LT(max_abs(in[0]), kNormal);
  EXPECT_GT(max_abs(in[1]), kPastNormal);
  EXPECT_LT(max_abs(in[2]), kNormal);
  in = inputs_of("cross_entropy_backward/f32/4x100/wide/seed=1");  // logits, targets, dloss
  EXPECT_GT(max_abs(in[0]), kPastNormal);
  EXPECT_LT(max_abs(in[2]), kNormal);
  EXPECT_GT(max_abs(inputs_of("embedding/f32/8x10x50/wide/seed=1")[1]), kPastNormal);
  EXPECT_GT(max_abs(inputs_of("embedding_backward/f32/8x10x50/wide/seed=1")[1]), kPastNormal);
  EXPECT_GT(max_abs(inputs_of("rotary_embedding/f32/4x2x50/wide/seed=1")[0]), kPastNormal);
  in = inputs_of("attention/f32/1x2x8x50/wide/seed=1");
  for (size_t k = 0; k < 3; ++k) EXPECT_GT(max_abs(in[k]), kPastNormal) << k;
  in = inputs_of("attention_backward/f32/1x2x8x50/large/seed=1");  // dy, q, k, v, o, lse
  EXPECT_LT(max_abs(in[0]), kNormal);
  for (size_t k = 1; k < 4; ++k) EXPECT_GT(max_abs(in[k]), 4 * kNormal) << k;
  in = inputs_of("adamw/f32/400/wide/seed=1");  // param, grad, m, v
  EXPECT_GT(max_abs(in[0]), kPastNormal);
  EXPECT_LT(max_abs(in[1]), kNormal);
}

// gemm takes normal, uniform, exact, special and wide a and b; any other
// distribution gives normal ones. c is normal, or exact in an exact case.
TEST(Problem, GemmOperandsFollowOnlyTheDistributionsGemmTakes) {
  auto in = inputs_of("gemm/f32/8x8x50/wide+beta/seed=1");
  EXPECT_GT(std::min(max_abs(in[0]), max_abs(in[1])), 1e6);
  EXPECT_LT(max_abs(in[2]), 10);
  in = inputs_of("gemm/f32/8x8x50/uniform/seed=1");
  EXPECT_LE(std::max(max_abs(in[0]), max_abs(in[1])), 1);
  for (const char* id : {"gemm/f32/8x8x50/large/seed=1", "gemm/f32/8x8x50/offset/seed=1",
                         "gemm/f32/8x8x50/positive/seed=1"}) {
    in = inputs_of(id);
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_LT(max_abs(in[k]), 10) << id;
      EXPECT_TRUE(has_negative(in[k])) << id;
    }
  }
  in = inputs_of("gemm/f32/8x8x50/exact+beta/seed=1");
  for (double c : in[2].values) EXPECT_TRUE(c == std::round(c) && std::fabs(c) <= 3) << c;
  EXPECT_GT(std::count(in[2].values.begin(), in[2].values.end(), 0.0), 8);
}

// The saved forward results the backward cases read are the forward op's
// results on their x: log_softmax's y (each row's exp sums to 1), the
// norms' mean and rstd (eps 1e-5), attention's o and lse (rounded to their
// dtypes).
TEST(Problem, BackwardCasesReadTheirForwardResults) {
  auto p = build_problem(parse_case_id("log_softmax_backward/f32/4x50/seed=3"), kOracle);
  for (size_t r = 0; r < 4; ++r) {
    double sum = 0;
    for (size_t c = 0; c < 50; ++c) sum += std::exp(p.inputs[1].values[r * 50 + c]);
    EXPECT_NEAR(sum, 1.0, 1e-5) << r;
  }
  for (const char* id :
       {"layernorm_backward/f32/4x50/seed=3", "rmsnorm_backward/f32/4x50/seed=3"}) {
    p = build_problem(parse_case_id(id), kOracle);
    const bool layernorm = p.spec.op == "layernorm_backward";
    const HostTensor& rstd = p.inputs[layernorm ? 4 : 3];
    for (size_t r = 0; r < 4; ++r) {
      double sum = 0, squares = 0;
      for (size_t c = 0; c < 50; ++c) sum += p.inputs[1].values[r * 50 + c];
      const double mean = layernorm ? sum / 50 : 0;
      for (size_t c = 0; c < 50; ++c) squares += std::pow(p.inputs[1].values[r * 50 + c] - mean, 2);
      if (layernorm) {
        EXPECT_NEAR(p.inputs[3].values[r], mean, 1e-6) << id;
      }
      EXPECT_NEAR(rstd.values[r], 1 / std::sqrt(squares / 50 + 1e-5), 1e-5) << id;
    }
  }
  p = build_problem(parse_case_id("attention_backward/f32/1x2x6x8/seed=3"), kOracle);
  std::vector<HostTensor> out = {p.inputs[4], p.inputs[5]};
  const std::vector<HostTensor> qkv = {p.inputs[1], p.inputs[2], p.inputs[3]};
  kOracle(*find_op("attention"), qkv, out, p.attrs);
  for (auto& t : out)
    for (auto& v : t.values) v = round_to_dtype(v, t.dtype);
  EXPECT_EQ(out[0].values, p.inputs[4].values);
  EXPECT_EQ(out[1].values, p.inputs[5].values);
}

// adamw's state: m = 0.1 N(0, 1), v = 0.01 N(0, 1)^2 (never negative).
TEST(Problem, AdamwStateIsSmallAndItsSecondMomentNonNegative) {
  const auto in = inputs_of("adamw/f32/400/seed=3");  // param, grad, m, v
  EXPECT_LT(max_abs(in[2]), 0.6);
  EXPECT_GT(max_abs(in[2]), 0.2);
  EXPECT_TRUE(has_negative(in[2]));
  EXPECT_FALSE(has_negative(in[3]));
  EXPECT_LT(max_abs(in[3]), 0.36);
  EXPECT_GT(max_abs(in[3]), 0.04);
}

// exp's wide range replaces only exp's wide inputs: exp's normal ones and
// other ops' wide ones are untouched; log's special inputs keep their negatives.
TEST(Problem, OnlyExpWideTakesTheExpRangeAndOnlyWideRootsTakeAbs) {
  EXPECT_LT(max_abs(inputs_of("exp/f32/500/seed=2")[0]), 10);
  const HostTensor tanh_wide = inputs_of("tanh/f32/500/wide/seed=2")[0];
  EXPECT_GT(max_abs(tanh_wide), 1e6);
  EXPECT_TRUE(has_negative(tanh_wide));
  EXPECT_TRUE(has_negative(inputs_of("log/f32/60/special/seed=2")[0]));
}

// Different seeds, different inputs (the seed reaches the generator).
TEST(Problem, SeedsGiveDifferentInputs) {
  const auto a = build_problem(parse_case_id("add/f32/16/seed=1"), kOracle);
  const auto b = build_problem(parse_case_id("add/f32/16/seed=2"), kOracle);
  EXPECT_NE(a.inputs[0].values, b.inputs[0].values);
}

}  // namespace
}  // namespace polychip::precision
