// case_key: the one spelling of a case's name that the precision suite's
// case ids and recorded traces' keys share.
#include "polychip/case_key.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace polychip {
namespace {

TEST(CaseKey, SpellsOpDtypeDimsVariantAndSeed) {
  const std::vector<int64_t> gemm = {64, 32, 16}, none, one = {999};
  EXPECT_EQ(case_key("gemm", DType::kF32, gemm, "tf32", 7), "gemm/f32/64x32x16/tf32/seed=7");
  EXPECT_EQ(case_key("gelu", DType::kBF16, one, "", 2), "gelu/bf16/999/seed=2");
  EXPECT_EQ(case_key("fill", DType::kF16, none, "special+strided", 18446744073709551615u),
            "fill/f16/scalar/special+strided/seed=18446744073709551615");
}

}  // namespace
}  // namespace polychip
