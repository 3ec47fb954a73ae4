// The case lists per level: level names, which cases each level adds (seeds,
// f64, the larger problems) and the seeded random shapes of standard.
#include "case_list.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "exhaustive_unary.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::precision {
namespace {

std::set<std::string> ids_of(Level level) {
  std::set<std::string> ids;
  for (const CaseSpec& spec : cases_for_level(level)) ids.insert(case_id(spec));
  return ids;
}

bool fuzzed(const CaseSpec& spec) {
  return spec.seed >= kFirstFuzzedSeed && spec.seed < kFirstCrossedSeed;
}

TEST(CaseList, LevelNamesRoundTripAndAnUnknownNameThrows) {
  for (Level level : {Level::kQuick, Level::kStandard, Level::kFull})
    EXPECT_EQ(parse_level(level_name(level)), level) << level_name(level);
  EXPECT_THROW(parse_level("fast"), Error);
}

TEST(CaseList, EachLevelRepeatsAListedCaseWithOneTwoOrFourSeeds) {
  const std::pair<Level, std::set<uint64_t>> expected[] = {
      {Level::kQuick, {1}}, {Level::kStandard, {1, 2}}, {Level::kFull, {1, 2, 3, 4}}};
  for (const auto& [level, seeds] : expected) {
    std::map<std::string, std::set<uint64_t>> seeds_of;  // id without its seed -> seeds
    for (CaseSpec spec : cases_for_level(level)) {
      // (An exhaustive f32 case is its range of inputs: one seed.)
      if (spec.seed >= kFirstFuzzedSeed || is_exhaustive_f32(spec)) continue;
      const uint64_t seed = spec.seed;
      spec.seed = 0;
      seeds_of[case_id(spec)].insert(seed);
    }
    ASSERT_FALSE(seeds_of.empty());
    for (const auto& [id, s] : seeds_of) EXPECT_EQ(s, seeds) << level_name(level) << ": " << id;
  }
}

TEST(CaseList, EachLevelKeepsTheCasesOfTheOneBelowAndAddsItsOwn) {
  const auto quick = ids_of(Level::kQuick), standard = ids_of(Level::kStandard),
             full = ids_of(Level::kFull);
  EXPECT_TRUE(std::includes(standard.begin(), standard.end(), quick.begin(), quick.end()));
  EXPECT_TRUE(std::includes(full.begin(), full.end(), standard.begin(), standard.end()));
  // f64 joins every op's float cases from standard on; quick keeps a few.
  EXPECT_TRUE(quick.count("exp/f64/1000/seed=1"));
  EXPECT_FALSE(quick.count("neg/f64/1000/seed=1"));
  EXPECT_TRUE(standard.count("neg/f64/1000/seed=1"));
  // Standard's longer rows and special values in every dtype.
  for (const char* id : {"exp/f32/4096/wide/seed=1", "tanh/bf16/999/special/seed=1",
                         "gemm/f32/8x8x8192/seed=1", "attention/f32/2x4x128x64/seed=1"}) {
    EXPECT_FALSE(quick.count(id)) << id;
    EXPECT_TRUE(standard.count(id)) << id;
  }
  // Full's large gemm.
  EXPECT_FALSE(standard.count("gemm/f32/256x256x256/seed=1"));
  EXPECT_TRUE(full.count("gemm/f32/256x256x256/seed=1"));
}

// Which dims of a fuzzed case are drawn loop lengths, with the longest each
// may be (fuzzed_shapes in case_list.cpp); dims of 1,024 and more only where
// `long_only`.
std::vector<std::pair<size_t, int64_t>> drawn_lengths(std::string_view family, bool long_only) {
  std::vector<std::pair<size_t, int64_t>> all;
  if (family == "elementwise") all = {{0, 64}, {1, 2048}};
  if (family == "reduction" || family == "softmax" || family == "norm" || family == "loss")
    all = {{0, 64}, {1, 4096}};
  if (family == "gemm") all = {{0, 128}, {1, 128}, {2, 1024}};
  if (family == "attention") all = {{2, 256}};
  if (family == "embedding") all = {{0, 256}, {1, 1024}, {2, 256}};
  if (family == "rotary") all = {{0, 64}};
  if (family == "optimizer") all = {{0, 65536}};
  std::vector<std::pair<size_t, int64_t>> out;
  for (const auto& d : all)
    if (!long_only || d.second >= 1024) out.push_back(d);
  return out;
}

bool critical(int64_t n) {  // 2^k - 1, 2^k or 2^k + 1
  for (int64_t m : {n - 1, n, n + 1})
    if (m > 1 && (m & (m - 1)) == 0) return true;
  return false;
}

TEST(CaseList, StandardFuzzesLayoutsOnlyWhereTheOpHasThem) {
  // token -> {fuzzed cases of ops that may have it, of which have it}
  std::map<std::string, std::pair<int, int>> drawn;
  for (const CaseSpec& spec : cases_for_level(Level::kStandard)) {
    if (!fuzzed(spec)) continue;
    SCOPED_TRACE(case_id(spec));
    const std::string_view family = find_op(spec.op)->family;
    const bool elementwise = family == "elementwise";
    EXPECT_EQ(!spec.value_of("to").empty(), spec.op == "cast");
    const std::pair<const char*, bool> may_have[] = {
        {"strided", (elementwise && spec.op != "fill") || family == "reduction"},
        {"axis0", family == "reduction" || family == "softmax"},
        {"ta", family == "gemm"},
        {"noncausal", family == "attention"}};
    for (const auto& [token, allowed] : may_have) {
      if (!allowed) {
        EXPECT_FALSE(spec.has(token)) << token;
        continue;
      }
      ++drawn[token].first;
      drawn[token].second += spec.has(token);
    }
  }
  // A coin decides each: some cases have the token, some do not.
  for (const auto& [token, n] : drawn) {
    EXPECT_GT(n.second, 0) << token;
    EXPECT_LT(n.second, n.first) << token;
  }
}

TEST(CaseList, StandardFuzzesThreeShapesPerOpWithinBoundsHalfAtCriticalLengths) {
  std::map<std::string, std::set<std::string>> shapes;  // op -> ids without their seed
  std::set<int64_t> distinct;
  int long_draws = 0, long_critical = 0;
  for (const CaseSpec& spec : cases_for_level(Level::kStandard)) {
    if (!fuzzed(spec)) continue;
    SCOPED_TRACE(case_id(spec));
    CaseSpec shape = spec;
    shape.seed = 0;
    shapes[spec.op].insert(case_id(shape));
    const std::string_view family = find_op(spec.op)->family;
    for (const auto& [dim, max] : drawn_lengths(family, false)) {
      ASSERT_LT(dim, spec.dims.size());
      EXPECT_GE(spec.dims[dim], 1);
      EXPECT_LE(spec.dims[dim], max);
      distinct.insert(spec.dims[dim]);
    }
    if (family == "rotary") {  // a head's D: pairs, 1 to 64 of them
      EXPECT_EQ(spec.dims[2] % 2, 0);
      EXPECT_GE(spec.dims[2], 2);
      EXPECT_LE(spec.dims[2], 128);
    }
    for (const auto& [dim, max] : drawn_lengths(family, true)) {
      ++long_draws;
      long_critical += critical(spec.dims[dim]);
    }
  }
  for (const OpSpec& op : op_contract()) EXPECT_EQ(shapes[op.name].size(), 3u) << op.name;
  EXPECT_GT(distinct.size(), 100u);
  // Half the draws are critical; a uniform draw from [1, 1024] or more
  // rarely is (under 5%).
  EXPECT_GT(long_critical * 3, long_draws) << long_critical << " of " << long_draws;
}

}  // namespace
}  // namespace polychip::precision
