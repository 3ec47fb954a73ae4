// Covering arrays and the op factor registry: every required t-tuple is
// covered (checked by brute force, not by the code under test), no row
// holds a forbidden pair, tuples that forbidden pairs rule out together are
// not required, and the registry's cases are what their rows say.
#include "covering_array.hpp"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "case_list.hpp"
#include "interaction_coverage.hpp"
#include "op_factors.hpp"
#include "polychip/op_contract.hpp"
#include "precision/oracle/oracle.hpp"
#include "problem.hpp"

namespace polychip::precision {
namespace {

const PairAllowed kAnyPair = [](size_t, size_t, size_t, size_t) { return true; };

// Whether some row holds values (va, vb, vc) of factors (a, b, c); c may be
// kUnknown for pairs.
bool held(const std::vector<FactorRow>& rows, size_t a, size_t va, size_t b, size_t vb,
          size_t c = kUnknown, size_t vc = 0) {
  return std::any_of(rows.begin(), rows.end(), [&](const FactorRow& r) {
    return r[a] == va && r[b] == vb && (c == kUnknown || r[c] == vc);
  });
}

TEST(CoveringArray, EveryPairAndEveryTripleAppearsInFewerRowsThanTheProduct) {
  const std::vector<size_t> counts{3, 4, 2, 5, 3, 2};
  const auto pairs = covering_array(counts, 2, kAnyPair);
  for (size_t a = 0; a < counts.size(); ++a)
    for (size_t b = a + 1; b < counts.size(); ++b)
      for (size_t va = 0; va < counts[a]; ++va)
        for (size_t vb = 0; vb < counts[b]; ++vb)
          EXPECT_TRUE(held(pairs, a, va, b, vb)) << a << "=" << va << " " << b << "=" << vb;
  // At least the two largest factors' product; greedy stays near it.
  EXPECT_GE(pairs.size(), 20u);
  EXPECT_LE(pairs.size(), 30u);

  const auto triples = covering_array(counts, 3, kAnyPair);
  for (size_t a = 0; a < counts.size(); ++a)
    for (size_t b = a + 1; b < counts.size(); ++b)
      for (size_t c = b + 1; c < counts.size(); ++c)
        for (size_t va = 0; va < counts[a]; ++va)
          for (size_t vb = 0; vb < counts[b]; ++vb)
            for (size_t vc = 0; vc < counts[c]; ++vc)
              EXPECT_TRUE(held(triples, a, va, b, vb, c, vc));
  EXPECT_LT(triples.size(), 3u * 4 * 2 * 5 * 3 * 2 / 4);
  EXPECT_EQ(covering_array(counts, 3, kAnyPair), triples);  // deterministic
  EXPECT_EQ(tuple_coverage(counts, 3, triples, kAnyPair).missing.size(), 0u);
  EXPECT_GT(tuple_coverage(counts, 3, pairs, kAnyPair).missing.size(), 0u);
}

TEST(CoveringArray, AStrongerArrayExtendsTheWeakerOne) {
  const std::vector<size_t> counts{3, 3, 3, 3};
  const auto pairs = covering_array(counts, 2, kAnyPair);
  const auto triples = covering_array(counts, 3, kAnyPair, pairs);
  ASSERT_GT(triples.size(), pairs.size());
  EXPECT_TRUE(std::equal(pairs.begin(), pairs.end(), triples.begin()));
  EXPECT_EQ(tuple_coverage(counts, 3, triples, kAnyPair).missing.size(), 0u);
}

// rows (f0), row (f1), axis (f2): a line of one element is never reduced,
// so rows = 1 with axis0 and row = 1 with the last axis are forbidden, and
// together they rule out rows = row = 1, which holds neither pair.
TEST(CoveringArray, ForbiddenPairsNeverAppearAndTheTuplesTheyRuleOutAreNotHoles) {
  const std::vector<size_t> counts{2, 2, 2};  // value 0 is "1", axis 0 is "last"
  const PairAllowed allowed = [](size_t fa, size_t va, size_t fb, size_t vb) {
    if (fa == 1 && fb == 2 && va == 0 && vb == 0) return false;  // row = 1, last
    if (fa == 0 && fb == 2 && va == 0 && vb == 1) return false;  // rows = 1, axis0
    return true;
  };
  const auto rows = covering_array(counts, 2, allowed);
  for (const FactorRow& r : rows) {
    EXPECT_FALSE(r[1] == 0 && r[2] == 0);
    EXPECT_FALSE(r[0] == 0 && r[2] == 1);
    EXPECT_FALSE(r[0] == 0 && r[1] == 0);
  }
  const TupleCoverage c = tuple_coverage(counts, 2, rows, allowed);
  EXPECT_EQ(c.missing.size(), 0u);
  EXPECT_EQ(c.forbidden, 3);  // the two declared pairs and the pair they rule out
  EXPECT_EQ(c.covered, c.required);
  EXPECT_EQ(c.required, 12 - 3);
}

TEST(CoveringArray, UnknownValuesCoverOnlyTheFactorsTheyName) {
  const std::vector<size_t> counts{2, 2};
  const TupleCoverage c =
      tuple_coverage(counts, 2, {{0, kUnknown}, {kUnknown, 1}, {1, 1}}, kAnyPair);
  EXPECT_EQ(c.covered, 1);
  EXPECT_EQ(c.missing.size(), 3u);
}

TEST(OpFactors, EveryOpOfTheContractHasFactorsAndEachRowsCaseHoldsItsRow) {
  for (const OpSpec& spec : op_contract()) {
    const OpFactors* op = find_op_factors(spec.name);
    ASSERT_NE(op, nullptr) << spec.name;
    std::vector<FactorRow> rows;
    for (int t = 2; t <= 3; ++t)
      rows = covering_array(value_counts(*op), t, allowed_pairs(*op), std::move(rows));
    for (size_t i = 0; i < rows.size(); ++i) {
      const CaseSpec c = case_of_row(*op, rows[i], kFirstCrossedSeed + i);
      EXPECT_EQ(classify_case(*op, c), rows[i]) << case_id(c);
      EXPECT_EQ(parse_case_id(case_id(c)).variant, c.variant) << case_id(c);
    }
  }
}

// Every crossed case of standard (which holds quick's) builds: the declared
// invalid combinations are the only ones the ops cannot take.
TEST(OpFactors, EveryCrossedCaseBuildsAProblem) {
  int crossed = 0;
  for (const CaseSpec& spec : cases_for_level(Level::kStandard)) {
    if (spec.seed < kFirstCrossedSeed) continue;
    ++crossed;
    EXPECT_NO_THROW(build_problem(spec, kOracle)) << case_id(spec);
  }
  EXPECT_GT(crossed, 2000);
}

TEST(OpFactors, QuickCoversEveryPairOfValuesAndStandardEveryTriple) {
  for (const auto& [level, strength] : {std::pair{Level::kQuick, 2}, {Level::kStandard, 3}}) {
    for (const OpInteractionCoverage& c : interaction_coverage(cases_for_level(level), strength)) {
      EXPECT_EQ(c.tuples.covered, c.tuples.required) << level_name(level) << " " << c.op;
      EXPECT_GT(c.tuples.required, 0) << c.op;
    }
  }
  // Quick does not reach every triple: standard's crossing adds cases.
  int64_t missing = 0;
  for (const OpInteractionCoverage& c : interaction_coverage(cases_for_level(Level::kQuick), 3))
    missing += static_cast<int64_t>(c.tuples.missing.size());
  EXPECT_GT(missing, 0);
}

}  // namespace
}  // namespace polychip::precision
