#include "case_spec.hpp"

#include <gtest/gtest.h>

#include "polychip/error.hpp"

namespace polychip::precision {
namespace {

TEST(CaseSpec, IdRoundTripsEveryField) {
  CaseSpec s{"gemm", DType::kBF16, {3, 16, 24, 40}, {"ta", "beta"}, 7};
  EXPECT_EQ(case_id(s), "gemm/bf16/3x16x24x40/ta+beta/seed=7");
  CaseSpec back = parse_case_id(case_id(s));
  EXPECT_EQ(back.op, "gemm");
  EXPECT_EQ(back.dtype, DType::kBF16);
  EXPECT_EQ(back.dims, (Shape{3, 16, 24, 40}));
  EXPECT_EQ(back.variant, (std::vector<std::string>{"ta", "beta"}));
  EXPECT_EQ(back.seed, 7u);
  EXPECT_TRUE(back.has("ta"));
  EXPECT_FALSE(back.has("tb"));
}

TEST(CaseSpec, IdWithoutVariantAndKeyValueTokens) {
  EXPECT_EQ(parse_case_id("gemm/f32/64x64x64/seed=7").variant.size(), 0u);
  EXPECT_EQ(parse_case_id("cast/f32/10/wide+to=f16/seed=1").value_of("to"), "f16");
  EXPECT_EQ(parse_case_id("cast/f32/10/wide/seed=1").value_of("to"), "");
  EXPECT_EQ(parse_case_id("add/f32/0/seed=1").dims, (Shape{0}));
}

void expect_rejected(const std::string& id, const std::string& fragment) {
  try {
    parse_case_id(id);
    FAIL() << id << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find(fragment), std::string::npos) << e.message();
  }
}

TEST(CaseSpec, BadIdsAreRejectedNamingThePart) {
  expect_rejected("nosuchop/f32/4/seed=1", "unknown op 'nosuchop'");
  expect_rejected("exp/f33/4/seed=1", "f33");
  expect_rejected("exp/f32/4xq/seed=1", "dimension 'q'");
  expect_rejected("exp/f32/-4/seed=1", "dimension '-4'");
  expect_rejected("exp/f32/4/seed=x", "seed=");
  expect_rejected("exp/f32/4", "wrong number");
  expect_rejected("exp/f32/4/a++b/seed=1", "empty variant");
}

TEST(CaseSpec, TokensMatchWholeAndValuesNeedTheirKeyAndEquals) {
  const CaseSpec s = parse_case_id("cast/f32/10/tanh+ab=f32+tox=f16+to+to=bf16/seed=1");
  EXPECT_TRUE(s.has("tanh"));
  EXPECT_FALSE(s.has("tan"));  // a prefix is no token
  EXPECT_FALSE(s.has("to=b"));
  EXPECT_EQ(s.value_of("to"), "bf16");  // not another key's, not "tox=f16"'s, not the bare "to"
  EXPECT_EQ(parse_case_id("cast/f32/10/to=/seed=1").value_of("to"), "");
  EXPECT_EQ(parse_case_id("cast/f32/10/to/seed=1").value_of("to"), "");
}

TEST(CaseSpec, IdPrintsScalarAndSingleTokenVariantsAndParsesThemBack) {
  const CaseSpec scalar{"exp", DType::kF16, {}, {}, 0};
  EXPECT_EQ(case_id(scalar), "exp/f16/scalar/seed=0");
  EXPECT_TRUE(parse_case_id(case_id(scalar)).dims.empty());
  const CaseSpec one{"exp", DType::kF32, {5}, {"wide"}, 18446744073709551615ull};
  EXPECT_EQ(case_id(one), "exp/f32/5/wide/seed=18446744073709551615");
  EXPECT_EQ(parse_case_id(case_id(one)).seed, one.seed);  // the largest seed
  EXPECT_EQ(parse_case_id(case_id(one)).variant, one.variant);
}

TEST(CaseSpec, MalformedNumbersAndPartCountsAreRefused) {
  expect_rejected("exp/f32/4/a/b/seed=1", "wrong number");  // six parts
  expect_rejected("exp/f32/4x/seed=1", "dimension ''");
  expect_rejected("exp/f32/4 /seed=1", "dimension '4 '");
  expect_rejected("exp/f32/4/seed=", "seed=");
  expect_rejected("exp/f32/4/seed=1x", "'seed=1x'");
  expect_rejected("exp/f32/4/sead=1", "'sead=1'");
  expect_rejected("exp/f32/4/seed=18446744073709551616", "seed=");  // one past the largest
  expect_rejected("exp/f32/4/seed=-1", "seed=");
  expect_rejected("exp/f32/4//seed=1", "empty variant");
}

// The id is the view, not the buffer behind it: digits after it are not read.
TEST(CaseSpec, ParsingStopsAtTheEndOfTheView) {
  const std::string_view longer = "exp/f32/4/seed=12";
  EXPECT_EQ(parse_case_id(longer.substr(0, longer.size() - 1)).seed, 1u);
}

}  // namespace
}  // namespace polychip::precision
