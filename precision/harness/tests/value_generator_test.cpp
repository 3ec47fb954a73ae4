// Seeded value generators (value_generator.hpp): the range of each
// distribution, the dtype limits they are drawn from, and the names case
// ids use for them.
#include "value_generator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "polychip/error.hpp"

namespace polychip::precision {
namespace {

constexpr Distribution kAll[] = {
    Distribution::kNormal, Distribution::kUniform, Distribution::kPositive,
    Distribution::kWide,   Distribution::kSpecial, Distribution::kOffset,
    Distribution::kLarge,  Distribution::kExact,   Distribution::kExhaustive};

std::vector<double> values(Distribution d, DType dtype, int64_t n, uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  return generate_values(d, dtype, n, rng);
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double stddev(const std::vector<double>& v) {
  const double m = mean(v);
  double sum = 0;
  for (double x : v) sum += (x - m) * (x - m);
  return std::sqrt(sum / static_cast<double>(v.size()));
}

// Bit-for-bit equality, NaN equal to NaN and -0 unequal to +0.
bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

TEST(ValueGenerator, SameSeedSameValuesAllRepresentable) {
  for (DType dt : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16})
    for (auto d : {Distribution::kNormal, Distribution::kUniform, Distribution::kPositive,
                   Distribution::kWide, Distribution::kSpecial, Distribution::kOffset,
                   Distribution::kLarge}) {
      std::mt19937_64 a(42), b(42);
      auto x = generate_values(d, dt, 500, a);
      auto y = generate_values(d, dt, 500, b);
      ASSERT_EQ(x.size(), 500u);
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_TRUE(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])));
        if (!std::isnan(x[i])) {
          EXPECT_EQ(round_to_dtype(x[i], dt), x[i]);
        }
        if (d == Distribution::kPositive) {
          EXPECT_GT(x[i], 0);
        }
      }
    }
}

TEST(ValueGenerator, SpecialValuesCoverSubnormalsZerosInfNan) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    auto v = special_values(dt);
    const FloatFormat f = float_format(dt);
    bool sub = false, neg_zero = false, inf = false, nan = false;
    for (double x : v) {
      sub |= x != 0 && std::fabs(x) < f.min_normal();
      neg_zero |= x == 0 && std::signbit(x);
      inf |= std::isinf(x);
      nan |= std::isnan(x);
    }
    EXPECT_TRUE(sub && neg_zero && inf && nan) << dtype_name(dt);
  }
  std::mt19937_64 rng(1);
  for (double id : generate_indices(1000, 7, rng)) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 7);
  }
}

// Case ids name distributions; every name parses back to its own.
TEST(ValueGenerator, DistributionNamesParseBackToTheirDistribution) {
  for (Distribution d : kAll) {
    Distribution parsed = d == Distribution::kNormal ? Distribution::kLarge : Distribution::kNormal;
    EXPECT_TRUE(parse_distribution(distribution_name(d), parsed)) << distribution_name(d);
    EXPECT_EQ(parsed, d) << distribution_name(d);
  }
  EXPECT_EQ(distribution_name(Distribution::kWide), "wide");
  EXPECT_EQ(distribution_name(Distribution::kExhaustive), "exhaustive");
  EXPECT_EQ(distribution_name(static_cast<Distribution>(99)), "?");
  // Not a name (other variant tokens): false, and the distribution is kept.
  Distribution d = Distribution::kLarge;
  for (const char* token : {"", "norma", "normals", "ta", "Normal"})
    EXPECT_FALSE(parse_distribution(token, d)) << token;
  EXPECT_EQ(d, Distribution::kLarge);
}

TEST(ValueGenerator, FloatFormatsHoldEachDtypesLimits) {
  const FloatFormat f64 = float_format(DType::kF64);
  EXPECT_EQ(f64.min_normal(), std::numeric_limits<double>::min());
  EXPECT_EQ(f64.min_subnormal(), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(f64.max_finite, std::numeric_limits<double>::max());
  const FloatFormat f32 = float_format(DType::kF32);
  EXPECT_EQ(f32.min_normal(), std::numeric_limits<float>::min());
  EXPECT_EQ(f32.min_subnormal(), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(f32.max_finite, std::numeric_limits<float>::max());
  // {min subnormal, min normal, max finite} of the narrow formats.
  const struct {
    DType dtype;
    double sub, norm, max;
  } narrow[] = {{DType::kF16, 0x1p-24, 0x1p-14, 65504},
                {DType::kBF16, 0x1p-133, 0x1p-126, 0x1.FEp127},
                {DType::kF8E4M3, 0x1p-9, 0x1p-6, 448},
                {DType::kF8E5M2, 0x1p-16, 0x1p-14, 57344}};
  for (const auto& n : narrow) {
    const FloatFormat f = float_format(n.dtype);
    EXPECT_EQ(f.min_subnormal(), n.sub) << dtype_name(n.dtype);
    EXPECT_EQ(f.min_normal(), n.norm) << dtype_name(n.dtype);
    EXPECT_EQ(f.max_finite, n.max) << dtype_name(n.dtype);
    // Each is a value of the dtype: rounding keeps it.
    for (double x : {n.sub, n.norm, n.max}) EXPECT_EQ(round_to_dtype(x, n.dtype), x);
  }
  for (DType dt : {DType::kI32, DType::kI64, DType::kBool}) {
    try {
      float_format(dt);
      ADD_FAILURE() << dtype_name(dt);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(e.message().find(std::string(dtype_name(dt)) + " is not a floating dtype"),
                std::string::npos)
          << e.message();
    }
  }
}

// In this order: fill's special value is special_values()[seed % 15].
TEST(ValueGenerator, SpecialValuesAreTheEdgesOfTheDtypeInOrder) {
  const double inf = std::numeric_limits<double>::infinity(),
               nan = std::numeric_limits<double>::quiet_NaN();
  const struct {
    DType dtype;
    double sub, max_sub, norm, max;
  } formats[] = {{DType::kF32, 0x1p-149, 0x1p-126 - 0x1p-149, 0x1p-126, 0x1.FFFFFEp127},
                 {DType::kF16, 0x1p-24, 0x1p-14 - 0x1p-24, 0x1p-14, 65504},
                 {DType::kBF16, 0x1p-133, 0x1p-126 - 0x1p-133, 0x1p-126, 0x1.FEp127}};
  for (const auto& f : formats) {
    const std::vector<double> want = {0.0,    -0.0,    f.sub, -f.sub, f.max_sub,
                                      f.norm, -f.norm, f.max, -f.max, inf,
                                      -inf,   nan,     1.0,   -1.0,   0.5};
    const std::vector<double> got = special_values(f.dtype);
    ASSERT_EQ(got.size(), want.size()) << dtype_name(f.dtype);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(same(got[i], want[i])) << dtype_name(f.dtype) << " [" << i << "] " << got[i];
  }
}

TEST(ValueGenerator, NormalUniformAndPositiveDrawFromTheirRanges) {
  const auto normal = values(Distribution::kNormal, DType::kF64, 4000);
  EXPECT_NEAR(mean(normal), 0, 0.1);
  EXPECT_NEAR(stddev(normal), 1, 0.1);
  const auto uniform = values(Distribution::kUniform, DType::kF64, 4000);
  const auto [ulo, uhi] = std::minmax_element(uniform.begin(), uniform.end());
  EXPECT_GE(*ulo, -1);
  EXPECT_LT(*ulo, -0.99);
  EXPECT_LE(*uhi, 1);
  EXPECT_GT(*uhi, 0.99);
  // Log-uniform in [2^-8, 2^8]: as many below 1 as above.
  const auto positive = values(Distribution::kPositive, DType::kF64, 4000);
  const auto [plo, phi] = std::minmax_element(positive.begin(), positive.end());
  EXPECT_GE(*plo, 0x1p-8);
  EXPECT_LT(*plo, 0x1p-7);
  EXPECT_LE(*phi, 0x1p8);
  EXPECT_GT(*phi, 0x1p7);
  const auto below_one =
      std::count_if(positive.begin(), positive.end(), [](double x) { return x < 1; });
  EXPECT_NEAR(static_cast<double>(below_one) / 4000, 0.5, 0.05);
}

// Random sign, magnitudes 2^U(emin - 4, emax / 2): subnormals up to the
// square root of the largest value (a product of two stays finite).
TEST(ValueGenerator, WideSpansSubnormalsToTheSquareRootOfMax) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    const FloatFormat f = float_format(dt);
    const auto v = values(Distribution::kWide, dt, 4000);
    double smallest = std::numeric_limits<double>::infinity(), largest = 0;
    int64_t negative = 0;
    for (double x : v) {
      smallest = std::min(smallest, std::fabs(x));
      largest = std::max(largest, std::fabs(x));
      negative += x < 0;
    }
    EXPECT_LT(smallest, f.min_normal()) << dtype_name(dt);
    EXPECT_LE(largest, std::exp2(f.max_exp / 2.0)) << dtype_name(dt);
    EXPECT_GT(largest, std::exp2(f.max_exp / 2.0 - 2)) << dtype_name(dt);
    EXPECT_NEAR(static_cast<double>(negative) / 4000, 0.5, 0.05) << dtype_name(dt);
  }
}

// Every third value is the next special value, in order; the others are
// normal draws (so a NaN does not swamp the tensor).
TEST(ValueGenerator, SpecialPutsTheSpecialValuesAtEveryThirdPosition) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    const std::vector<double> specials = special_values(dt);
    const auto v = values(Distribution::kSpecial, dt, 3 * 20);
    for (size_t k = 0; k < v.size(); ++k) {
      if (k % 3 == 0)
        EXPECT_TRUE(same(v[k], specials[k / 3 % specials.size()])) << dtype_name(dt) << " " << k;
      else
        EXPECT_TRUE(std::isfinite(v[k]) && std::fabs(v[k]) < 10) << dtype_name(dt) << " " << k;
    }
  }
}

// A tensor too short for the cycle to reach NaN ends its specials with NaN
// instead, so a kernel that drops NaN fails on any special case; one that
// reaches it keeps the cycle.
TEST(ValueGenerator, EverySpecialCaseHoldsANaNHoweverShort) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    const std::vector<double> specials = special_values(dt);
    const size_t nan_at = static_cast<size_t>(
        std::find_if(specials.begin(), specials.end(), [](double x) { return std::isnan(x); }) -
        specials.begin());
    for (int64_t n = 1; n <= 3 * static_cast<int64_t>(specials.size()); ++n) {
      const auto v = values(Distribution::kSpecial, dt, n);
      size_t nans = 0;
      for (double x : v) nans += std::isnan(x);
      EXPECT_EQ(nans, 1u) << dtype_name(dt) << " n=" << n;
      const size_t last = static_cast<size_t>(n - 1) / 3;
      for (size_t k = 0; k < v.size(); k += 3) {
        const bool replaced = last < nan_at && k / 3 == last;
        if (!replaced) {
          EXPECT_TRUE(same(v[k], specials[k / 3])) << dtype_name(dt) << " " << k;
        }
      }
    }
  }
}

// offset is the normal draw plus 1e4 (f64) or 1e3 (the other dtypes); large
// is it times 400 (f64) or 50: past ln(max) of f64 and f32.
TEST(ValueGenerator, OffsetAndLargeShiftAndScaleTheNormalDraws) {
  const auto normal = values(Distribution::kNormal, DType::kF64, 1000);
  const auto offset64 = values(Distribution::kOffset, DType::kF64, 1000);
  const auto large64 = values(Distribution::kLarge, DType::kF64, 1000);
  const auto offset32 = values(Distribution::kOffset, DType::kF32, 1000);
  const auto large32 = values(Distribution::kLarge, DType::kF32, 1000);
  for (size_t i = 0; i < normal.size(); ++i) {
    EXPECT_EQ(offset64[i], 1e4 + normal[i]) << i;
    EXPECT_EQ(large64[i], 400 * normal[i]) << i;
    EXPECT_EQ(offset32[i], round_to_dtype(1e3 + normal[i], DType::kF32)) << i;
    EXPECT_EQ(large32[i], round_to_dtype(50 * normal[i], DType::kF32)) << i;
  }
}

// Every bit pattern in order, the non-finite ones as 0; only f16 and bf16.
TEST(ValueGenerator, ExhaustiveWalksEveryBitPatternOfF16AndBF16) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    const auto v = values(Distribution::kExhaustive, dt, 65536);
    for (uint32_t k = 0; k < 65536; ++k) {
      const auto bits = static_cast<uint16_t>(k);
      const double x = load_as_f64(&bits, dt);
      ASSERT_TRUE(same(v[k], std::isfinite(x) ? x : 0.0)) << dtype_name(dt) << " " << k;
    }
  }
  for (DType dt : {DType::kF32, DType::kF64, DType::kF8E4M3}) {
    try {
      values(Distribution::kExhaustive, dt, 4);
      ADD_FAILURE() << dtype_name(dt);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(e.message().find("need f16 or bf16, not " + std::string(dtype_name(dt))),
                std::string::npos)
          << e.message();
    }
  }
}

// Integers -3..3, each a ninth of the time, except 0: a third.
TEST(ValueGenerator, ExactDrawsSmallIntegersWithExtraZeros) {
  const auto v = values(Distribution::kExact, DType::kBF16, 9000);
  std::map<double, int> count;
  for (double x : v) ++count[x];
  ASSERT_EQ(count.size(), 7u);
  EXPECT_EQ(count.begin()->first, -3);
  EXPECT_EQ(count.rbegin()->first, 3);
  for (const auto& [x, n] : count) EXPECT_NEAR(n / 9000.0, x == 0 ? 3 / 9.0 : 1 / 9.0, 0.02) << x;
}

TEST(ValueGenerator, IndicesCoverZeroToBoundAndAnEmptyRangeGivesZeros) {
  std::mt19937_64 rng(3);
  const auto ids = generate_indices(1000, 5, rng);
  EXPECT_EQ(std::set<double>(ids.begin(), ids.end()), (std::set<double>{0, 1, 2, 3, 4}));
  // bound 0 (an empty vocabulary): zeros, not a draw from [0, -1].
  for (double id : generate_indices(100, 0, rng)) EXPECT_EQ(id, 0);
  EXPECT_TRUE(generate_indices(0, 5, rng).empty());
}

}  // namespace
}  // namespace polychip::precision
