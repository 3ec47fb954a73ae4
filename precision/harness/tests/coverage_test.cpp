// The coverage model: quick reaches every critical point of every op, and
// a hole is reported by name.
#include "coverage.hpp"

#include <algorithm>

#include <gtest/gtest.h>

#include "case_list.hpp"
#include "polychip/op_contract.hpp"
#include "precision/oracle/oracle.hpp"

namespace polychip::precision {
namespace {

TEST(Coverage, QuickReachesEveryCriticalPointOfEveryOp) {
  const Coverage cov = coverage_of(cases_for_level(Level::kQuick), kOracle);
  EXPECT_EQ(cov.size(), op_contract().size());
  const auto holes = coverage_holes(cov);
  std::string list;
  for (const auto& h : holes) list += h + "\n";
  EXPECT_TRUE(holes.empty()) << list;
  EXPECT_GT(cov.at("rmsnorm").at("attr:eps"), 0);
  EXPECT_GT(cov.at("softmax").at("len:>=model"), 0);
  EXPECT_GT(cov.at("tanh").at("len:2^k-1"), 0);
  EXPECT_GT(cov.at("mul").at("layout:broadcast"), 0);
  EXPECT_GT(cov.at("embedding_backward").at("values:repeated"), 0);
}

TEST(Coverage, AHoleIsNamed) {
  // Only default attributes, short rows of 8: eps, every length point and
  // the offset and exact values are holes.
  const Coverage cov =
      coverage_of({parse_case_id("rmsnorm/f32/4x8/seed=1"), parse_case_id("rmsnorm/f16/4x8/seed=1"),
                   parse_case_id("rmsnorm/bf16/4x8/seed=1")},
                  kOracle);
  EXPECT_EQ(cov.at("rmsnorm").at("dtype:f16"), 1);
  const auto holes = coverage_holes(cov);
  EXPECT_NE(std::find(holes.begin(), holes.end(),
                      "rmsnorm: attr:eps, len:2^k+1, len:2^k-1, len:>=model, values:exact, "
                      "values:offset"),
            holes.end())
      << holes.size();
}

}  // namespace
}  // namespace polychip::precision
