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

// op's points as "point=count ...", in order.
std::string points_of(const Coverage& cov, const std::string& op) {
  std::string out;
  for (const auto& [point, n] : cov.at(op))
    out += (out.empty() ? "" : " ") + point + "=" + std::to_string(n);
  return out;
}

TEST(Coverage, EachOpHasThePointsOfItsFamily) {
  // No cases: every point of every op's model is a hole.
  const Coverage cov = coverage_of({}, kOracle);
  std::string models;
  for (const char* op :
       {"add", "exp", "relu_backward", "cast", "fill", "reduce_sum", "softmax", "cross_entropy",
        "layernorm", "gemm", "attention", "embedding_backward", "rotary_embedding", "adamw"})
    models += points_of(cov, op) + "\n";
  EXPECT_EQ(models,
            // add
            "dtype:bf16=0 dtype:f16=0 dtype:f32=0 layout:broadcast=0 layout:strided=0 len:2^k+1=0 "
            "len:2^k-1=0 len:<16=0 len:>=model=0 len:empty=0 values:special=0\n"
            // exp
            "dtype:bf16=0 dtype:f16=0 dtype:f32=0 layout:strided=0 len:2^k+1=0 len:2^k-1=0 "
            "len:<16=0 len:>=model=0 len:empty=0 values:special=0\n"
            // relu_backward
            "dtype:bf16=0 dtype:f16=0 dtype:f32=0 layout:strided=0 len:2^k+1=0 len:2^k-1=0 "
            "len:<16=0 len:>=model=0 len:empty=0\n"
            // cast
            "dtype:bf16=0 dtype:f16=0 dtype:f32=0 layout:strided=0 len:2^k+1=0 len:2^k-1=0 "
            "len:<16=0 len:>=model=0 len:empty=0 values:special=0\n"
            // fill
            "attr:value=0 dtype:bf16=0 dtype:f16=0 dtype:f32=0 len:<16=0 len:empty=0\n"
            // reduce_sum
            "attr:axis=0 dtype:bf16=0 dtype:f16=0 dtype:f32=0 layout:axis0=0 layout:strided=0 "
            "len:2^k+1=0 len:2^k-1=0 len:>=model=0 values:exact=0\n"
            // softmax
            "attr:axis=0 dtype:bf16=0 dtype:f16=0 dtype:f32=0 layout:axis0=0 len:2^k+1=0 "
            "len:2^k-1=0 len:>=model=0 values:large=0\n"
            // cross_entropy
            "dtype:bf16=0 dtype:f16=0 dtype:f32=0 len:2^k+1=0 len:2^k-1=0 len:>=model=0 "
            "values:large=0\n"
            // layernorm
            "attr:eps=0 dtype:bf16=0 dtype:f16=0 dtype:f32=0 len:2^k+1=0 len:2^k-1=0 "
            "len:>=model=0 values:exact=0 values:offset=0\n"
            // gemm
            "attr:alpha=0 attr:beta=0 attr:math_mode=0 attr:trans_a=0 attr:trans_b=0 dtype:bf16=0 "
            "dtype:f16=0 dtype:f32=0 layout:transposed=0 len:2^k+1=0 len:2^k-1=0 len:>=model=0 "
            "len:empty=0 values:exact=0 values:special=0\n"
            // attention
            "attr:causal=0 attr:scale=0 dtype:bf16=0 dtype:f16=0 dtype:f32=0 len:2^k+1=0 "
            "len:2^k-1=0 len:>=model=0 values:exact=0\n"
            // embedding_backward
            "dtype:bf16=0 dtype:f16=0 dtype:f32=0 len:2^k+1=0 len:2^k-1=0 len:>=model=0 "
            "values:exact=0 values:repeated=0\n"
            // rotary_embedding
            "attr:inverse=0 dtype:bf16=0 dtype:f16=0 dtype:f32=0 len:2^k+1=0 len:2^k-1=0 "
            "len:>=model=0\n"
            // adamw
            "attr:beta1=0 attr:beta2=0 attr:eps=0 attr:lr=0 attr:step=0 attr:weight_decay=0 "
            "dtype:bf16=0 dtype:f16=0 dtype:f32=0 len:2^k+1=0 len:2^k-1=0 len:>=model=0\n");
}

TEST(Coverage, LengthPointsCountTheLengthsAtTheirEdges) {
  std::vector<CaseSpec> cases;
  for (const char* id : {"neg/f32/0/seed=1", "neg/f32/2x0x3/seed=1", "neg/f32/7/seed=1",
                         "neg/f32/15/seed=1", "neg/f32/16/seed=1", "neg/f32/17/seed=1",
                         "neg/f32/33/seed=1", "neg/f32/4095/seed=1", "neg/f32/4096/seed=1"})
    cases.push_back(parse_case_id(id));
  // 2^k - 1 from 15 on (7 is below a vector), 2^k + 1 from 17 on (4095 is
  // not), under 16 only when not empty.
  EXPECT_EQ(points_of(coverage_of(cases, kOracle), "neg"),
            "dtype:bf16=0 dtype:f16=0 dtype:f32=9 layout:strided=0 len:2^k+1=2 len:2^k-1=2 "
            "len:<16=2 len:>=model=1 len:empty=2 values:special=0");
}

TEST(Coverage, EitherTransposeAndANonDefaultIntAttributeCount) {
  const Coverage cov = coverage_of(
      {parse_case_id("gemm/f32/4x4x4/seed=1"), parse_case_id("gemm/f32/4x4x4/ta/seed=1"),
       parse_case_id("gemm/f32/4x4x4/tb/seed=1")},
      kOracle);
  EXPECT_EQ(cov.at("gemm").at("layout:transposed"), 2);
  EXPECT_EQ(cov.at("gemm").at("attr:trans_a"), 1);
  EXPECT_EQ(cov.at("gemm").at("attr:trans_b"), 1);
  EXPECT_EQ(cov.at("gemm").at("attr:alpha"), 0);
}

TEST(Coverage, TableCountsPointsAndNamesHolesAndTheFewestReached) {
  const Coverage cov = {{"a", {{"p", 2}, {"q", 0}, {"r", 1}, {"s", 3}}}, {"b", {{"x", 4}}}};
  EXPECT_EQ(coverage_table(cov, "T"),
            "T\n"
            "op                       covered  fewest cases                 holes\n"
            "a                          3/4    r (1)                        q\n"
            "b                          1/1    x (4)                        -\n"
            "4 of 5 critical points covered across 2 ops: holes above\n");
  // No holes; of points reached equally often the first is named.
  EXPECT_EQ(coverage_table({{"b", {{"x", 4}, {"y", 4}}}}, "T"),
            "T\n"
            "op                       covered  fewest cases                 holes\n"
            "b                          2/2    x (4)                        -\n"
            "2 of 2 critical points covered across 1 ops\n");
}

}  // namespace
}  // namespace polychip::precision
