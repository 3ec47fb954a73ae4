#include "metrics.hpp"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace polychip::precision {
namespace {

HostTensor tensor(DType dt, std::vector<double> v) {
  HostTensor t;
  t.dtype = dt;
  t.shape = {static_cast<int64_t>(v.size())};
  t.values = std::move(v);
  return t;
}

Tolerance ulp_tol(double bound) {
  Tolerance t;
  t.mode = ToleranceMode::kUlp;
  t.ulp = bound;
  return t;
}

TEST(Metrics, UlpOfKnownPoints) {
  EXPECT_EQ(ulp_of(1.0, DType::kF32), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp_of(1.5, DType::kF16), std::ldexp(1.0, -10));
  EXPECT_EQ(ulp_of(1.0, DType::kBF16), std::ldexp(1.0, -7));
  EXPECT_EQ(ulp_of(1.0, DType::kF64), std::ldexp(1.0, -52));
  EXPECT_EQ(ulp_of(1e-40, DType::kF32), std::ldexp(1.0, -149));  // subnormal spacing
  EXPECT_EQ(ulp_of(-3.0, DType::kF32), std::ldexp(1.0, -22));
  EXPECT_EQ(ulp_of(1e300, DType::kF32), std::ldexp(1.0, 104));  // beyond max: max's spacing
}

TEST(Metrics, CorrectlyRoundedPassesZeroUlpBoundOneUlpOffFails) {
  const double exact = 1.0 + std::ldexp(1.0, -25);  // 0.25 ulp above 1 in f32
  auto ok = compare_output(tensor(DType::kF32, {1.0}), tensor(DType::kF64, {exact}), ulp_tol(0), 1);
  EXPECT_TRUE(ok.within_tolerance());
  EXPECT_NEAR(ok.max_ulp_error, 0.25, 1e-12);
  auto bad = compare_output(tensor(DType::kF32, {1.0 + std::ldexp(1.0, -23)}),
                            tensor(DType::kF64, {exact}), ulp_tol(0), 1);
  EXPECT_FALSE(bad.within_tolerance());
  EXPECT_EQ(bad.mismatches, 1);
  EXPECT_NEAR(bad.max_ulp_error, 0.75, 1e-12);
  EXPECT_EQ(bad.worst_index, 0);
}

TEST(Metrics, F64AllowsTheOraclesOwnHalfUlp) {
  const double one_up = 1.0 + std::ldexp(1.0, -52);
  EXPECT_TRUE(
      compare_output(tensor(DType::kF64, {one_up}), tensor(DType::kF64, {1.0}), ulp_tol(0), 1)
          .within_tolerance());
  const double two_up = 1.0 + std::ldexp(1.0, -51);
  EXPECT_FALSE(
      compare_output(tensor(DType::kF64, {two_up}), tensor(DType::kF64, {1.0}), ulp_tol(0), 1)
          .within_tolerance());
}

TEST(Metrics, NonFiniteValuesMustMatchTheirClass) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // exact beyond f32 range rounds to Inf: Inf is right, FLT_MAX is not.
  EXPECT_TRUE(compare_output(tensor(DType::kF32, {inf}), tensor(DType::kF64, {1e39}), ulp_tol(3), 1)
                  .within_tolerance());
  EXPECT_FALSE(compare_output(tensor(DType::kF32, {std::numeric_limits<float>::max()}),
                              tensor(DType::kF64, {1e39}), ulp_tol(3), 1)
                   .within_tolerance());
  EXPECT_TRUE(compare_output(tensor(DType::kF32, {nan}), tensor(DType::kF64, {nan}), ulp_tol(0), 1)
                  .within_tolerance());
  auto m = compare_output(tensor(DType::kF32, {nan}), tensor(DType::kF64, {0.0}), ulp_tol(0), 1);
  EXPECT_FALSE(m.within_tolerance());
  EXPECT_TRUE(std::isinf(m.max_tolerance_fraction));
  EXPECT_FALSE(
      compare_output(tensor(DType::kF32, {-inf}), tensor(DType::kF64, {inf}), ulp_tol(0), 1)
          .within_tolerance());
  // Where the exact value is NaN, a number is wrong however loose the bound.
  auto number_for_nan =
      compare_output(tensor(DType::kF32, {0.0}), tensor(DType::kF64, {nan}), ulp_tol(1e9), 1);
  EXPECT_FALSE(number_for_nan.within_tolerance());
  EXPECT_EQ(number_for_nan.mismatches, 1);
}

TEST(Metrics, ExactModeMatchesNaNOnlyWithNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tolerance t;
  t.mode = ToleranceMode::kExact;
  EXPECT_TRUE(compare_output(tensor(DType::kF32, {nan}), tensor(DType::kF64, {nan}), t, 1)
                  .within_tolerance());
  EXPECT_FALSE(compare_output(tensor(DType::kF32, {nan}), tensor(DType::kF64, {1.0}), t, 1)
                   .within_tolerance());
  EXPECT_FALSE(compare_output(tensor(DType::kF32, {1.0}), tensor(DType::kF64, {nan}), t, 1)
                   .within_tolerance());
}

TEST(Metrics, CloseModeWithNothingAllowedRefusesAnyDifference) {
  Tolerance t;
  t.mode = ToleranceMode::kClose;
  t.rtol = 0;
  t.atol_factor = 0;
  EXPECT_TRUE(compare_output(tensor(DType::kF32, {0.0}), tensor(DType::kF64, {0.0}), t, 1)
                  .within_tolerance());
  auto m = compare_output(tensor(DType::kF32, {0.0, 1e-30}), tensor(DType::kF64, {0.0, 0.0}), t, 1);
  EXPECT_FALSE(m.within_tolerance());
  EXPECT_TRUE(std::isinf(m.max_tolerance_fraction));
  EXPECT_EQ(m.worst_index, 1);
}

TEST(Metrics, TheWorstElementIsTheFurthestOutsideItsBoundWhereverItIs) {
  // A later, worse element replaces an earlier one...
  auto later =
      compare_output(tensor(DType::kF32, {1.0 + std::ldexp(1.0, -23), 2.0 + std::ldexp(1.0, -20)}),
                     tensor(DType::kF64, {1.0, 2.0}), ulp_tol(0), 1);
  EXPECT_EQ(later.worst_index, 1);
  EXPECT_NEAR(later.max_ulp_error, 4.0, 1e-12);
  // ...and an equally bad later one does not: the first stays named.
  auto tie =
      compare_output(tensor(DType::kF32, {1.0 + std::ldexp(1.0, -23), 1.0 + std::ldexp(1.0, -23)}),
                     tensor(DType::kF64, {1.0, 1.0}), ulp_tol(0), 1);
  EXPECT_EQ(tie.worst_index, 0);
}

TEST(Metrics, CloseModeScalesAtolWithReductionLengthAndMagnitude) {
  Tolerance t;
  t.mode = ToleranceMode::kClose;
  t.rtol = 0;
  t.atol_factor = 1e-3;
  // scale = max |exact| = 10: atol = 1e-3 * len * 10.
  auto exact = tensor(DType::kF64, {10.0, 0.0});
  EXPECT_TRUE(compare_output(tensor(DType::kF32, {10.0, 0.019}), exact, t, 2).within_tolerance());
  EXPECT_FALSE(compare_output(tensor(DType::kF32, {10.0, 0.021}), exact, t, 2).within_tolerance());
  EXPECT_TRUE(compare_output(tensor(DType::kF32, {10.0, 0.029}), exact, t, 3).within_tolerance());
  // Elementwise (reduce_len 1): atol is atol_factor itself, whatever the
  // magnitudes elsewhere in the output (special values reach FLT_MAX).
  auto huge = tensor(DType::kF64, {3e38, 0.0});
  EXPECT_TRUE(compare_output(tensor(DType::kF32, {3e38, 0.0009}), huge, t, 1).within_tolerance());
  EXPECT_FALSE(compare_output(tensor(DType::kF32, {3e38, 0.0011}), huge, t, 1).within_tolerance());
  auto m = compare_output(tensor(DType::kF32, {11.0, 0.0}), exact, t, 1);
  EXPECT_DOUBLE_EQ(m.max_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(m.max_rel_error, 0.1);
  EXPECT_DOUBLE_EQ(m.mean_rel_error, 0.1);  // only r != 0 counts
}

// Row ops: atol = atol_factor * sqrt(reduce_len) * scale.
TEST(Metrics, RowOpsAbsoluteTermGrowsAsTheSquareRootOfTheRow) {
  Tolerance t;
  t.mode = ToleranceMode::kClose;
  t.rtol = 0;
  t.atol_factor = 1e-3;
  t.atol_grows_as_sqrt = true;
  // scale 10, row of 400: atol = 1e-3 * 20 * 10 = 0.2 (linear: 4).
  auto exact = tensor(DType::kF64, {10.0, 0.0});
  EXPECT_TRUE(compare_output(tensor(DType::kF32, {10.0, 0.19}), exact, t, 400).within_tolerance());
  EXPECT_FALSE(compare_output(tensor(DType::kF32, {10.0, 0.21}), exact, t, 400).within_tolerance());
  t.atol_grows_as_sqrt = false;
  EXPECT_TRUE(compare_output(tensor(DType::kF32, {10.0, 0.21}), exact, t, 400).within_tolerance());
}

TEST(Metrics, IntegerOutputsAreExact) {
  Tolerance t;
  t.mode = ToleranceMode::kExact;
  EXPECT_TRUE(compare_output(tensor(DType::kI64, {3, 4}), tensor(DType::kI64, {3, 4}), t, 1)
                  .within_tolerance());
  auto m = compare_output(tensor(DType::kI64, {3, 5}), tensor(DType::kI64, {3, 4}), t, 1);
  EXPECT_EQ(m.mismatches, 1);
  EXPECT_EQ(m.worst_index, 1);
}

TEST(Metrics, UnderAZeroToleranceTheWorstIsTheFurthestOff) {
  Tolerance t;
  t.mode = ToleranceMode::kExact;
  auto m =
      compare_output(tensor(DType::kF32, {1, 2.5, 7, 4}), tensor(DType::kF64, {1, 2, 3, 4}), t, 1);
  EXPECT_EQ(m.mismatches, 2);
  EXPECT_EQ(m.worst_index, 2);
  EXPECT_DOUBLE_EQ(m.max_abs_error, 4.0);
  EXPECT_DOUBLE_EQ(m.worst_device - m.worst_exact, 4.0);
  // The furthest first: a nearer miss after it, or one as far, does not take its place.
  auto first =
      compare_output(tensor(DType::kF32, {1, 7, 2.5, -1}), tensor(DType::kF64, {1, 3, 2, 3}), t, 1);
  EXPECT_EQ(first.worst_index, 1);
}

TEST(Metrics, HexFloat) {
  EXPECT_EQ(hex_float(3.0), "0x1.8p+1");
  EXPECT_EQ(hex_float(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(hex_float(std::nan("")), "nan");
}

}  // namespace
}  // namespace polychip::precision

namespace polychip::precision {
namespace {

// An output that is the difference of much larger terms (layernorm's dx
// when D = 2) is measured against the terms' magnitude: rounding in the
// terms passes, an error of the terms' own size (a dropped term) does not.
TEST(Metrics, CancellationIsMeasuredAgainstTheTermsMagnitude) {
  Tolerance close;
  close.mode = ToleranceMode::kClose;
  close.rtol = 1.3e-6;
  close.atol_factor = 2.4e-7;
  const double terms = 40.0, exact = 0.0075;
  const HostTensor rounded = tensor(DType::kF32, {exact + 8 * terms * std::ldexp(1.0, -24)});
  const HostTensor dropped_term = tensor(DType::kF32, {exact + terms * 1e-3});
  const HostTensor want = tensor(DType::kF64, {exact});
  EXPECT_FALSE(compare_output(rounded, want, close, 2).within_tolerance());
  EXPECT_TRUE(compare_output(rounded, want, close, 2, terms).within_tolerance());
  EXPECT_FALSE(compare_output(dropped_term, want, close, 2, terms).within_tolerance());
  // Elementwise outputs (reduce_len 1) keep the plain absolute term.
  EXPECT_FALSE(compare_output(rounded, want, close, 1, terms).within_tolerance());
}

}  // namespace
}  // namespace polychip::precision
