// The op contract's table is well-formed and validation names the argument.
#include <gtest/gtest.h>

#include <set>

#include "op_contract_test_helpers.hpp"
#include "polychip/op_contract.hpp"

namespace polychip {
namespace {

using testing::fake_memory;
using testing::tensor;

TEST(OpContractTest, TableIsWellFormed) {
  std::set<std::string> names;
  for (const auto& op : op_contract()) {
    EXPECT_TRUE(names.insert(op.name).second) << "duplicate op " << op.name;
    EXPECT_NE(op.check, nullptr) << op.name;
    EXPECT_FALSE(op.dtypes.empty()) << op.name;
    EXPECT_LE(op.tensors.size(), static_cast<size_t>(POLYCHIP_MAX_OP_TENSORS)) << op.name;
    std::set<int> int_slots, float_slots;
    for (const auto& a : op.attrs) {
      EXPECT_TRUE(a.slot >= 0 && a.slot < POLYCHIP_MAX_OP_ATTRS) << op.name;
      EXPECT_TRUE((a.is_float ? float_slots : int_slots).insert(a.slot).second)
          << op.name << " reuses slot " << a.slot;
    }
    EXPECT_EQ(find_op(op.name), &op);
  }
  EXPECT_EQ(find_op("no_such_op"), nullptr);
  for (const char* must : {"gemm", "softmax", "layernorm", "attention", "adamw", "cross_entropy",
                           "embedding_backward", "rotary_embedding", "rmsnorm_backward"})
    EXPECT_NE(find_op(must), nullptr) << must;
}

TEST(OpContractTest, GemmShapesAreChecked) {
  const OpSpec& gemm = *find_op("gemm");
  auto attrs = default_attrs(gemm);
  EXPECT_EQ(attrs.floats[attr::kAlpha], 1.0);
  std::vector<polychip_tensor> t = {
      tensor(DType::kF32, {4, 3}, fake_memory(1)), tensor(DType::kF32, {3, 5}, fake_memory(2)),
      tensor(DType::kF32, {4, 5}, fake_memory(3)), tensor(DType::kF32, {4, 5}, fake_memory(4))};
  EXPECT_EQ(validate_call(gemm, {t, &attrs}), "");
  t[1] = tensor(DType::kF32, {2, 5}, fake_memory(2));
  EXPECT_NE(validate_call(gemm, {t, &attrs}).find("inner dimensions differ"), std::string::npos);
  t[1] = tensor(DType::kF16, {3, 5}, fake_memory(2));
  EXPECT_NE(validate_call(gemm, {t, &attrs}).find("'b' has dtype f16"), std::string::npos);
  t[1] = tensor(DType::kF32, {3, 5}, fake_memory(2));
  attrs.ints[attr::kMathMode] = 7;
  EXPECT_NE(validate_call(gemm, {t, &attrs}).find("math_mode"), std::string::npos);
}

TEST(OpContractTest, AliasingRules) {
  const OpSpec& add = *find_op("add");
  auto attrs = default_attrs(add);
  auto* m = fake_memory(1);
  // Exact in-place alias is allowed for elementwise ops.
  std::vector<polychip_tensor> t = {tensor(DType::kF32, {8}, m), tensor(DType::kF32, {8}, m, 32),
                                    tensor(DType::kF32, {8}, m)};
  EXPECT_EQ(validate_call(add, {t, &attrs}), "");
  // Partial overlap is not.
  t[2] = tensor(DType::kF32, {8}, m, 16);
  EXPECT_NE(validate_call(add, {t, &attrs}).find("output 'out' overlaps input"), std::string::npos);
  // Softmax may not work in place.
  const OpSpec& sm = *find_op("softmax");
  auto sa = default_attrs(sm);
  std::vector<polychip_tensor> s = {tensor(DType::kF32, {2, 4}, m), tensor(DType::kF32, {2, 4}, m)};
  EXPECT_NE(validate_call(sm, {s, &sa}).find("overlaps"), std::string::npos);
}

TEST(OpContractTest, StridesRankAndCountsAreChecked) {
  const OpSpec& exp = *find_op("exp");
  auto attrs = default_attrs(exp);
  std::vector<polychip_tensor> t = {tensor(DType::kF32, {4, 4}, fake_memory(1)),
                                    tensor(DType::kF32, {4, 4}, fake_memory(2))};
  t[0].strides[0] = -4;
  EXPECT_NE(validate_call(exp, {t, &attrs}).find("negative stride"), std::string::npos);
  t[0].strides[0] = 8;  // non-contiguous input is fine for elementwise
  EXPECT_EQ(validate_call(exp, {t, &attrs}), "");
  t[1].strides[0] = 0;  // output elements overlap
  EXPECT_NE(validate_call(exp, {t, &attrs}).find("zero stride"), std::string::npos);
  t.pop_back();
  EXPECT_NE(validate_call(exp, {t, &attrs}).find("takes 2 tensors, got 1"), std::string::npos);
  const OpSpec& ln = *find_op("layernorm");
  auto la = default_attrs(ln);
  std::vector<polychip_tensor> l = {
      tensor(DType::kF32, {2, 4}, fake_memory(1)), tensor(DType::kF32, {4}, fake_memory(2)),
      tensor(DType::kF32, {4}, fake_memory(3)),    tensor(DType::kF32, {2, 4}, fake_memory(4)),
      tensor(DType::kF32, {2}, fake_memory(5)),    tensor(DType::kF32, {2}, fake_memory(6))};
  EXPECT_EQ(validate_call(ln, {l, &la}), "");
  l[0].strides[0] = 8;  // layernorm needs row-major
  EXPECT_NE(validate_call(ln, {l, &la}).find("must be contiguous"), std::string::npos);
  l[0].strides[0] = 4;
  l[4].dtype = POLYCHIP_DTYPE_F16;
  EXPECT_NE(validate_call(ln, {l, &la}).find("'mean' must be f32"), std::string::npos);
  l[4].dtype = 42;
  EXPECT_NE(validate_call(ln, {l, &la}).find("unknown dtype code 42"), std::string::npos);
}

}  // namespace
}  // namespace polychip
