// The oracle against closed-form results.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "oracle_test_util.hpp"

namespace polychip::precision {
namespace {

using testing::attrs_of;
using testing::output;
using testing::run;
using testing::tensor;

TEST(OracleTest, EveryContractOpIsImplemented) {
  for (const auto& op : op_contract()) EXPECT_TRUE(oracle_supports(op.name)) << op.name;
}

TEST(OracleTest, GemmOfSmallIntegerMatricesIsExact) {
  // [[1,2,3],[4,5,6]] @ [[7,8],[9,10],[11,12]] = [[58,64],[139,154]]
  auto a = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  auto b = tensor({3, 2}, {7, 8, 9, 10, 11, 12});
  auto c = tensor({2, 2}, {1, 1, 1, 1});
  auto attrs = attrs_of("gemm");
  attrs.floats[attr::kAlpha] = 2;
  attrs.floats[attr::kBeta] = -1;
  auto out = run("gemm", {a, b, c}, {output({2, 2})}, &attrs);
  EXPECT_EQ(out[0].values, (std::vector<double>{115, 127, 277, 307}));
}

TEST(OracleTest, GemmTransposesAndBatches) {
  // Batch of 2; a stored transposed ([K, M]), b stored transposed ([N, K]).
  auto a = tensor({2, 2, 2}, {1, 3, 2, 4, /*batch 1*/ 1, 0, 0, 1});  // op(a)=[[1,2],[3,4]], I
  auto b = tensor({2, 2, 2}, {5, 7, 6, 8, /*batch 1*/ 2, 0, 0, 3});  // op(b)=[[5,6],[7,8]]
  auto c = tensor({2, 2, 2}, std::vector<double>(8, std::nan("")));  // beta = 0: not read
  auto attrs = attrs_of("gemm");
  attrs.ints[attr::kTransA] = 1;
  attrs.ints[attr::kTransB] = 1;
  auto out = run("gemm", {a, b, c}, {output({2, 2, 2})}, &attrs);
  EXPECT_EQ(out[0].values, (std::vector<double>{19, 22, 43, 50, 2, 0, 0, 3}));
}

TEST(OracleTest, GemmSumIsExactWhereDoubleAccumulationIsNot) {
  // 1 + 2^-60 - 1: a plain double accumulator loses the 2^-60 term.
  auto a = tensor({1, 3}, {1, std::ldexp(1.0, -60), -1});
  auto b = tensor({3, 1}, {1, 1, 1});
  auto out = run("gemm", {a, b, tensor({1, 1}, {0})}, {output({1, 1})});
  EXPECT_EQ(out[0].values[0], std::ldexp(1.0, -60));
}

TEST(OracleTest, SoftmaxOfEqualValuesIsOneOverN) {
  auto out = run("softmax", {tensor({2, 5}, std::vector<double>(10, 3.25))}, {output({2, 5})});
  for (double v : out[0].values) EXPECT_DOUBLE_EQ(v, 0.2);
  auto log_out =
      run("log_softmax", {tensor({2, 5}, std::vector<double>(10, -7))}, {output({2, 5})});
  for (double v : log_out[0].values) EXPECT_DOUBLE_EQ(v, -std::log(5.0));
}

TEST(OracleTest, SoftmaxAlongAxisZeroAndLargeValues) {
  // Axis 0 of [2, 2]: columns {1000, 1000 + ln 3} -> {1/4, 3/4}; no overflow.
  auto attrs = attrs_of("softmax");
  attrs.ints[attr::kAxis] = 0;
  double l3 = std::log(3.0);
  auto out = run("softmax", {tensor({2, 2}, {1000, 0, 1000 + l3, 0})}, {output({2, 2})}, &attrs);
  EXPECT_NEAR(out[0].values[0], 0.25, 1e-12);  // 1000 + ln 3 is inexact in double
  EXPECT_NEAR(out[0].values[2], 0.75, 1e-12);
  EXPECT_DOUBLE_EQ(out[0].values[1], 0.5);
}

TEST(OracleTest, LayernormOfArithmeticSequence) {
  // x = 1..4: mean 2.5, biased variance 1.25.
  auto attrs = attrs_of("layernorm");
  attrs.floats[attr::kEps] = 1e-300;
  auto out =
      run("layernorm",
          {tensor({1, 4}, {1, 2, 3, 4}), tensor({4}, {1, 1, 1, 2}), tensor({4}, {0, 0, 0, 1})},
          {output({1, 4}), output({1}, DType::kF32), output({1}, DType::kF32)}, &attrs);
  double rstd = 1 / std::sqrt(1.25);
  EXPECT_DOUBLE_EQ(out[1].values[0], 2.5);
  EXPECT_DOUBLE_EQ(out[2].values[0], rstd);
  EXPECT_DOUBLE_EQ(out[0].values[0], -1.5 * rstd);
  EXPECT_DOUBLE_EQ(out[0].values[1], -0.5 * rstd);
  EXPECT_DOUBLE_EQ(out[0].values[3], 2 * 1.5 * rstd + 1);
}

TEST(OracleTest, LayernormVarianceSurvivesLargeOffset) {
  // 1e8 + {-1, 1}: variance exactly 1; a one-pass E[x^2]-E[x]^2 in double fails.
  auto attrs = attrs_of("layernorm");
  attrs.floats[attr::kEps] = 1e-300;
  auto out = run("layernorm",
                 {tensor({1, 2}, {1e8 - 1, 1e8 + 1}), tensor({2}, {1, 1}), tensor({2}, {0, 0})},
                 {output({1, 2}), output({1}, DType::kF32), output({1}, DType::kF32)}, &attrs);
  EXPECT_DOUBLE_EQ(out[2].values[0], 1.0);
  EXPECT_DOUBLE_EQ(out[0].values[0], -1.0);
}

TEST(OracleTest, RmsnormOfConstantRow) {
  auto attrs = attrs_of("rmsnorm");
  attrs.floats[attr::kEps] = 1e-300;
  auto out = run("rmsnorm", {tensor({1, 3}, {-2, 2, 2}), tensor({3}, {1, 2, 3})},
                 {output({1, 3}), output({1}, DType::kF32)}, &attrs);
  EXPECT_DOUBLE_EQ(out[1].values[0], 0.5);
  EXPECT_EQ(out[0].values, (std::vector<double>{-1, 2, 3}));
}

TEST(OracleTest, GeluKnownValues) {
  auto run_gelu = [](double x, int approximate) {
    auto attrs = attrs_of("gelu");
    attrs.ints[attr::kGeluApproximate] = approximate;
    return run("gelu", {tensor({1}, {x})}, {output({1})}, &attrs)[0].values[0];
  };
  EXPECT_EQ(run_gelu(0, 0), 0);
  EXPECT_EQ(run_gelu(0, 1), 0);
  // gelu(1) = Phi(1) = 0.8413447460685429...
  EXPECT_NEAR(run_gelu(1, 0), 0.8413447460685429, 1e-16);
  // tanh form: 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.8411919906082768...
  EXPECT_NEAR(run_gelu(1, 1), 0.8411919906082768, 1e-15);
  // Deep negative tail: gelu(-30) = -30 Phi(-30), Phi(-30) = 4.906713927148187e-198.
  EXPECT_NEAR(run_gelu(-30, 0) / (-30 * 4.906713927148187e-198), 1, 1e-14);
  EXPECT_EQ(run_gelu(-INFINITY, 0), 0);
  EXPECT_EQ(run_gelu(INFINITY, 1), INFINITY);
}

TEST(OracleTest, TranscendentalsAndSpecialValues) {
  auto one = [](const char* op, double x) {
    return run(op, {tensor({1}, {x})}, {output({1})})[0].values[0];
  };
  EXPECT_DOUBLE_EQ(one("exp", 1), std::numbers::e);
  EXPECT_EQ(one("log", 0), -INFINITY);
  EXPECT_TRUE(std::isnan(one("log", -1)));
  EXPECT_EQ(one("rsqrt", 4), 0.5);
  EXPECT_EQ(one("sqrt", 2), std::sqrt(2.0));
  EXPECT_EQ(one("sigmoid", 0), 0.5);
  EXPECT_NEAR(one("sigmoid", -800), std::exp(-800.0), 1e-320);  // no 1 - x cancellation
  EXPECT_EQ(one("silu", -INFINITY), 0);
  EXPECT_TRUE(std::signbit(one("silu", -INFINITY)));
  EXPECT_TRUE(std::isnan(one("relu", NAN)));
  EXPECT_EQ(one("relu", -3), 0);
  EXPECT_EQ(one("tanh", 0.5), std::tanh(0.5));
}

TEST(OracleTest, BinaryOpsAreCorrectlyRoundedDouble) {
  auto a = tensor({3}, {1, 1, 0}), b = tensor({3}, {3, 0, 0});
  EXPECT_DOUBLE_EQ(run("div", {a, b}, {output({3})})[0].values[0], 1.0 / 3);
  auto d = run("div", {a, b}, {output({3})})[0].values;
  EXPECT_EQ(d[1], INFINITY);
  EXPECT_TRUE(std::isnan(d[2]));
  EXPECT_EQ(run("sub", {a, b}, {output({3})})[0].values[0], -2);
}

TEST(OracleTest, ReductionsAlongAxes) {
  // [[1, 2, 3], [4, 5, 6]]
  auto x = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  auto attrs = attrs_of("reduce_sum");
  attrs.ints[attr::kAxis] = 0;
  EXPECT_EQ(run("reduce_sum", {x}, {output({1, 3})}, &attrs)[0].values,
            (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(run("reduce_mean", {x}, {output({2, 1})})[0].values, (std::vector<double>{2, 5}));
  EXPECT_EQ(run("reduce_max", {x}, {output({2, 1})})[0].values, (std::vector<double>{3, 6}));
  EXPECT_EQ(run("l2_norm", {tensor({1, 2}, {3, 4})}, {output({1, 1})})[0].values[0], 5);
  // Compensated: 1e16 + 1 + ... - 1e16.
  auto s = run("reduce_sum", {tensor({4}, {1e16, 1, 1, -1e16})}, {output({1})})[0].values[0];
  EXPECT_EQ(s, 2);
}

TEST(OracleTest, ArgmaxTakesFirstMaximumAndNan) {
  auto out =
      run("argmax", {tensor({2, 4}, {1, 7, 7, 2, 1, NAN, 9, NAN})}, {output({2, 1}, DType::kI64)});
  EXPECT_EQ(out[0].values, (std::vector<double>{1, 1}));
  EXPECT_TRUE(
      std::isnan(run("reduce_max", {tensor({3}, {1, NAN, 2})}, {output({1})})[0].values[0]));
}

TEST(OracleTest, CrossEntropyOfUniformLogitsIsLogC) {
  auto out = run("cross_entropy",
                 {tensor({2, 7}, std::vector<double>(14, 0.5)), tensor({2}, {0, 6}, DType::kI64)},
                 {output({2}, DType::kF32)});
  EXPECT_DOUBLE_EQ(out[0].values[0], std::log(7.0));
  EXPECT_DOUBLE_EQ(out[0].values[1], std::log(7.0));
}

TEST(OracleTest, OutOfRangeTargetsAndIdsAreInvalidArgument) {
  auto logits = tensor({1, 3}, {0, 0, 0});
  try {
    run("cross_entropy", {logits, tensor({1}, {3}, DType::kI64)}, {output({1}, DType::kF32)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("targets"), std::string::npos) << e.what();
  }
  try {
    run("embedding", {tensor({2}, {0, -1}, DType::kI32), tensor({2, 2}, {1, 2, 3, 4})},
        {output({2, 2})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("ids"), std::string::npos) << e.what();
  }
}

TEST(OracleTest, BadShapesAndCountsAreInvalidArgument) {
  EXPECT_THROW(run("add", {tensor({2}, {1, 2}), tensor({3}, {1, 2, 3})}, {output({2})}), Error);
  EXPECT_THROW(run("add", {tensor({2}, {1, 2})}, {output({2})}), Error);
  // Values that do not match the shape.
  EXPECT_THROW(run("exp", {tensor({3}, {1, 2})}, {output({3})}), Error);
  EXPECT_THROW(run("gemm",
                   {tensor({2, 3}, std::vector<double>(6)), tensor({2, 2}, std::vector<double>(4)),
                    tensor({2, 2}, std::vector<double>(4))},
                   {output({2, 2})}),
               Error);
}

TEST(OracleTest, EmbeddingGathersRows) {
  auto out =
      run("embedding", {tensor({3}, {2, 0, 2}, DType::kI64), tensor({3, 2}, {1, 2, 3, 4, 5, 6})},
          {output({3, 2})});
  EXPECT_EQ(out[0].values, (std::vector<double>{5, 6, 1, 2, 5, 6}));
}

TEST(OracleTest, EmbeddingBackwardAccumulatesRepeatedIds) {
  auto out =
      run("embedding_backward",
          {tensor({4}, {1, 1, 0, 1}, DType::kI64), tensor({4, 2}, {1, 2, 3, 4, 5, 6, 1e-20, 1})},
          {output({3, 2})});
  EXPECT_EQ(out[0].values, (std::vector<double>{5, 6, 4 + 1e-20, 7, 0, 0}));
}

TEST(OracleTest, RotaryWithIdentityAngleCopiesAndQuarterTurnRotates) {
  auto x = tensor({1, 1, 4}, {1, 2, 3, 4});
  auto id = run("rotary_embedding",
                {x, tensor({1, 2}, {1, 1}, DType::kF32), tensor({1, 2}, {0, 0}, DType::kF32)},
                {output({1, 1, 4})});
  EXPECT_EQ(id[0].values, x.values);
  // cos = 0, sin = 1: (x1, x2) -> (-x2, x1).
  auto rot = run("rotary_embedding",
                 {x, tensor({1, 2}, {0, 0}, DType::kF32), tensor({1, 2}, {1, 1}, DType::kF32)},
                 {output({1, 1, 4})});
  EXPECT_EQ(rot[0].values, (std::vector<double>{-3, -4, 1, 2}));
  auto attrs = attrs_of("rotary_embedding");
  attrs.ints[attr::kInverse] = 1;
  auto back =
      run("rotary_embedding",
          {rot[0], tensor({1, 2}, {0, 0}, DType::kF32), tensor({1, 2}, {1, 1}, DType::kF32)},
          {output({1, 1, 4})}, &attrs);
  EXPECT_EQ(back[0].values, x.values);
}

TEST(OracleTest, CausalAttentionFirstQuerySeesOnlyFirstKey) {
  // B = H = 1, S = 3, D = 2.
  auto q = tensor({1, 1, 3, 2}, {1, 0, 0, 1, 1, 1});
  auto k = tensor({1, 1, 3, 2}, {0.5, 0, 0, 0.5, 1, 1});
  auto v = tensor({1, 1, 3, 2}, {10, 20, 30, 40, 50, 60});
  auto attrs = attrs_of("attention");
  attrs.floats[attr::kScale] = 1;
  auto out =
      run("attention", {q, k, v}, {output({1, 1, 3, 2}), output({1, 1, 3}, DType::kF32)}, &attrs);
  EXPECT_EQ(out[0].values[0], 10);
  EXPECT_EQ(out[0].values[1], 20);
  EXPECT_DOUBLE_EQ(out[1].values[0], 0.5);  // lse of one score = the score
  // Query 1 sees keys 0, 1 with scores 0 and 0.5.
  double p1 = 1 / (1 + std::exp(-0.5));
  EXPECT_NEAR(out[0].values[2], 10 * (1 - p1) + 30 * p1, 1e-13);
  EXPECT_NEAR(out[1].values[1], std::log(1 + std::exp(0.5)), 1e-15);
  // Non-causal with equal scores: o = mean of v.
  attrs.ints[attr::kCausal] = 0;
  auto eq = run("attention", {tensor({1, 1, 3, 2}, std::vector<double>(6, 0)), k, v},
                {output({1, 1, 3, 2}), output({1, 1, 3}, DType::kF32)}, &attrs);
  EXPECT_NEAR(eq[0].values[0], 30, 1e-13);
  EXPECT_NEAR(eq[0].values[5], 40, 1e-13);
  EXPECT_NEAR(eq[1].values[2], std::log(3.0), 1e-15);
}

TEST(OracleTest, AdamwFirstStepIsLrTimesSignPlusDecay) {
  // Step 1 from m = v = 0: m_hat = g, v_hat = g^2, update = g / (|g| + eps).
  auto attrs = attrs_of("adamw");
  attrs.floats[attr::kLr] = 0.1;
  attrs.floats[attr::kWeightDecay] = 0.5;
  attrs.floats[attr::kAdamEps] = 1e-300;
  auto out =
      run("adamw",
          {tensor({3}, {1, 2, -1}, DType::kF32), tensor({3}, {0.25, -3, 1e-3}),
           tensor({3}, {0, 0, 0}, DType::kF32), tensor({3}, {0, 0, 0}, DType::kF32)},
          {output({3}, DType::kF32), output({3}, DType::kF32), output({3}, DType::kF32)}, &attrs);
  EXPECT_NEAR(out[0].values[0], 1 - 0.1 * (0.5 + 1), 1e-15);
  EXPECT_NEAR(out[0].values[1], 2 - 0.1 * (1 - 1), 1e-15);
  EXPECT_NEAR(out[0].values[2], -1 - 0.1 * (-0.5 + 1), 1e-15);
  EXPECT_NEAR(out[1].values[1], 0.1 * -3, 1e-15);
  EXPECT_NEAR(out[2].values[1], 0.001 * 9, 1e-15);
}

TEST(OracleTest, CastCopyAndFillAreExact) {
  auto attrs = attrs_of("fill");
  attrs.floats[attr::kFillValue] = 0.1;
  auto f = run("fill", {}, {output({2, 2}, DType::kF16)}, &attrs);
  EXPECT_EQ(f[0].values, (std::vector<double>(4, 0.1)));  // rounding is the harness's business
  auto c = run("cast", {tensor({2}, {1e6, -0.1}, DType::kF32)}, {output({2}, DType::kF16)});
  EXPECT_EQ(c[0].values, (std::vector<double>{1e6, -0.1}));
  EXPECT_EQ(run("copy", {tensor({2}, {3, 4})}, {output({2})})[0].values,
            (std::vector<double>{3, 4}));
}

TEST(OracleTest, EmptyTensorsAreFine) {
  EXPECT_TRUE(run("exp", {tensor({0}, {})}, {output({0})})[0].values.empty());
  auto s = run("reduce_sum", {tensor({2, 0}, {})}, {output({2, 1})})[0].values;
  EXPECT_EQ(s, (std::vector<double>{0, 0}));
}

}  // namespace
}  // namespace polychip::precision
