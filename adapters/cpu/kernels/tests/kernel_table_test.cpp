// The cpu kernel table covers the whole op contract, every legal dtype.
#include <gtest/gtest.h>

#include "kernel_registry.hpp"
#include "kernel_test_util.hpp"

namespace polychip::testing {
namespace {

TEST(CpuKernelTable, EveryContractOpHasAnImplementation) {
  for (const auto& op : op_contract())
    EXPECT_NE(cpu::find_kernel_impl(op.name), nullptr) << op.name << " has no cpu kernel";
}

TEST_F(CpuKernelTest, EveryLegalSignatureIsRegistered) {
  auto& d = rt.dispatcher();
  const Device& dev = run.device();
  for (const auto& op : op_contract()) {
    for (DType t : op.dtypes) {
      DTypeSignature sig;
      for (const auto& spec : op.tensors) {
        switch (spec.dtype_role) {
          case DTypeRole::kT:
          case DTypeRole::kAnyFloat:
            sig.push_back(t);
            break;
          case DTypeRole::kF32:
            sig.push_back(DType::kF32);
            break;
          case DTypeRole::kIndex:
            sig.push_back(DType::kI32);
            break;
        }
      }
      EXPECT_TRUE(d.has_kernel(dev, op.name, sig)) << op.name << " " << signature_string(sig);
    }
  }
  EXPECT_TRUE(d.has_kernel(dev, "cast", {DType::kF8E4M3, DType::kBF16}));
  EXPECT_FALSE(d.has_kernel(dev, "add", {DType::kI32, DType::kI32, DType::kI32}));
}

}  // namespace
}  // namespace polychip::testing
