// When an output's exact values are too uniform to judge a kernel by.
#include "dominant_value.hpp"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace polychip::precision {
namespace {

// `n` values of which the first `same` are `value` and the rest distinct.
std::vector<double> mostly(double value, size_t same, size_t n) {
  std::vector<double> v(n, value);
  for (size_t i = same; i < n; ++i) v[i] = 1000.0 + static_cast<double>(i);
  return v;
}

TEST(DominantValue, MoreThanNinetyPercentOfAtLeastSixteenValues) {
  // 15 of 16 (93.75%) zeros: dominated.
  auto d = dominant_value(mostly(0.0, 15, 16));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->value, 0.0);
  EXPECT_EQ(d->count, 15u);
  // Fewer than 16 values are too few to mistrust, however uniform.
  EXPECT_FALSE(dominant_value(mostly(0.0, 15, 15)).has_value());
  // Exactly 90% is not more than 90%.
  EXPECT_FALSE(dominant_value(mostly(2.5, 18, 20)).has_value());
  d = dominant_value(mostly(2.5, 19, 20));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->value, 2.5);
  EXPECT_EQ(d->count, 19u);
  EXPECT_FALSE(dominant_value(mostly(0.0, 0, 100)).has_value());
}

TEST(DominantValue, NaNsCountAsOneValue) {
  auto d = dominant_value(mostly(NAN, 19, 20));
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(std::isnan(d->value));
  EXPECT_EQ(d->count, 19u);
  EXPECT_FALSE(dominant_value(mostly(NAN, 18, 20)).has_value());
  // NaNs beside a dominant number do not hide it.
  std::vector<double> v(40, 7.0);
  v[0] = NAN;
  d = dominant_value(v);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->value, 7.0);
  EXPECT_EQ(d->count, 39u);
}

}  // namespace
}  // namespace polychip::precision
