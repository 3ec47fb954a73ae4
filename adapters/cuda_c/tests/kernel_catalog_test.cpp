#include "gpu_common/kernel_catalog.hpp"

#include <set>

#include <gtest/gtest.h>

#include "polychip/op_contract.hpp"

namespace polychip::gpu {
namespace {

TEST(KernelCatalog, CoversEveryOpOfTheContract) {
  for (const auto& op : op_contract()) {
    const CatalogEntry* e = find_kernel(op.name);
    ASSERT_NE(e, nullptr) << op.name << " has no CUDA-C kernel";
    EXPECT_LT(e->dtype_tensor, static_cast<int>(op.tensors.size())) << op.name;
    if (e->index_tensor >= 0) {
      ASSERT_LT(e->index_tensor, static_cast<int>(op.tensors.size())) << op.name;
      EXPECT_EQ(op.tensors[e->index_tensor].dtype_role, DTypeRole::kIndex) << op.name;
    }
    // The kernel dtype comes from a tensor whose dtype is T (or cast's source).
    const DTypeRole role = op.tensors[e->dtype_tensor].dtype_role;
    EXPECT_TRUE(role == DTypeRole::kT || role == DTypeRole::kAnyFloat) << op.name;
  }
}

TEST(KernelCatalog, HasNoOpOutsideTheContract) {
  std::set<std::string> names;
  for (const auto& e : kernel_catalog()) {
    EXPECT_NE(find_op(e.op), nullptr) << e.op;
    EXPECT_TRUE(names.insert(e.op).second) << "duplicate " << e.op;
  }
  EXPECT_EQ(names.size(), op_contract().size());
}

TEST(KernelCatalog, SymbolsFollowTheKernelNamingScheme) {
  EXPECT_EQ(kernel_symbols(*find_kernel("add"), POLYCHIP_DTYPE_BF16),
            std::vector<std::string>{"pc_binary_bf16"});
  EXPECT_EQ(kernel_symbols(*find_kernel("layernorm_backward"), POLYCHIP_DTYPE_F32),
            (std::vector<std::string>{"pc_norm_backward_dx_f32", "pc_norm_backward_params_f32"}));
  EXPECT_EQ(
      kernel_symbols(*find_kernel("attention_backward"), POLYCHIP_DTYPE_F64),
      (std::vector<std::string>{"pc_attention_backward_dq_f64", "pc_attention_backward_dkdv_f64"}));
  EXPECT_EQ(kernel_symbols(*find_kernel("cast"), POLYCHIP_DTYPE_F8E4M3),
            std::vector<std::string>{"pc_cast"});
  EXPECT_TRUE(kernel_symbols(*find_kernel("add"), POLYCHIP_DTYPE_I32).empty());
}

// An image built from every symbol, NUL-terminated as in a symbol table.
std::vector<unsigned char> image_naming(const std::vector<std::string>& symbols) {
  std::vector<unsigned char> image = {'x', '\0'};
  for (const std::string& s : symbols)
    image.insert(image.end(), s.c_str(), s.c_str() + s.size() + 1);
  return image;
}

TEST(KernelCatalog, MissingSymbolsOfAnImageAreNamedWhole) {
  std::vector<std::string> all;
  for (const auto& e : kernel_catalog())
    for (polychip_dtype d : kKernelDtypes)
      for (const auto& s : kernel_symbols(e, d)) all.push_back(s);
  EXPECT_TRUE(missing_kernel_symbols(image_naming(all)).empty());

  std::vector<std::string> without_one;
  for (const auto& s : all)
    if (s != "pc_binary_f16") without_one.push_back(s == "pc_unary_f16" ? "pc_unary_f16x" : s);
  // A longer name that starts with a symbol does not hold that symbol.
  EXPECT_EQ(missing_kernel_symbols(image_naming(without_one)),
            (std::vector<std::string>{"pc_binary_f16", "pc_unary_f16"}));
}

TEST(KernelCatalog, KernelDtypes) {
  for (polychip_dtype d : kKernelDtypes) EXPECT_FALSE(kernel_dtype_suffix(d).empty());
  EXPECT_FALSE(is_kernel_dtype(POLYCHIP_DTYPE_F8E5M2));
  EXPECT_TRUE(is_kernel_dtype(POLYCHIP_DTYPE_BF16));
}

}  // namespace
}  // namespace polychip::gpu
