// Modelled-speed chips (roofline.hpp): POLYCHIP_SIM_MODELLED's syntax, the
// work the roofline counts per kernel, and its time.
#include <gtest/gtest.h>

#include <string>

#include "polychip/op_contract.hpp"
#include "roofline.hpp"

namespace polychip::sim {
namespace {

TEST(Roofline, ParsesNamedChipsAndRefusesMalformedOnes) {
  const ModelledChips ok = parse_modelled_chips("fast=8:4,slow_2=0.5:0.25:40");
  ASSERT_EQ(ok.error, "");
  ASSERT_EQ(ok.chips.size(), 2u);
  EXPECT_EQ(ok.chips[0].name, "fast");
  EXPECT_EQ(ok.chips[0].roofline.gflops, 8);
  EXPECT_EQ(ok.chips[0].roofline.gbytes_s, 4);
  EXPECT_EQ(ok.chips[0].roofline.launch_us, 0);
  EXPECT_EQ(ok.chips[1].name, "slow_2");
  EXPECT_EQ(ok.chips[1].roofline.launch_us, 40);
  EXPECT_EQ(parse_modelled_chips("fast=8:4:0").chips.at(0).roofline.launch_us, 0);
  EXPECT_TRUE(parse_modelled_chips(nullptr).chips.empty());
  // "sim.modelled-" and 40 characters: the longest device-type id allowed.
  EXPECT_EQ(parse_modelled_chips((std::string(40, 'x') + "=1:1").c_str()).error, "");
  EXPECT_NE(parse_modelled_chips((std::string(41, 'x') + "=1:1").c_str()).error, "");
  EXPECT_TRUE(parse_modelled_chips("").chips.empty());
  for (const char* bad :
       {"fast", "fast=8", "fast=8:", "fast=8:4:1:1", "=8:4", "f.x=8:4", "fast=0:4", "fast=8:-1",
        "fast=8:nan", "fast=8:inf", "fast=8:4,", "fast=8:4,fast=2:1", "fast=8x:4", "Fast=8:4",
        "fast=8:4:-1", "fast=8:4:", "fast=8:4:1:"}) {
    const ModelledChips c = parse_modelled_chips(bad);
    EXPECT_NE(c.error.find("POLYCHIP_SIM_MODELLED"), std::string::npos) << bad;
    EXPECT_TRUE(c.chips.empty()) << bad;
  }
}

cpu::TensorView view(std::initializer_list<int64_t> shape, DType dtype = DType::kF32) {
  cpu::TensorView v;
  v.dtype = dtype;
  for (int64_t d : shape) v.shape[v.rank++] = d;
  return v;
}

TEST(Roofline, CountsGemmAttentionAndElementwiseWork) {
  polychip_op_attrs attrs{};
  // y[2, 3, 5] = a[2, 3, 4] @ b[2, 4, 5]: 2*2*3*5*4 FLOPs; 24+40+30+30 floats moved.
  const cpu::TensorView gemm[] = {view({2, 3, 4}), view({2, 4, 5}), view({2, 3, 5}),
                                  view({2, 3, 5})};
  KernelWork w = kernel_work({"gemm", gemm, &attrs, nullptr});
  EXPECT_EQ(w.flops, 2.0 * 2 * 3 * 5 * 4);
  EXPECT_EQ(w.bytes, 4.0 * (24 + 40 + 30 + 30));
  // trans_a: a is [B, K, M]: K = 7.
  attrs.ints[attr::kTransA] = 1;
  const cpu::TensorView gemm_t[] = {view({7, 3}), view({7, 5}), view({3, 5}), view({3, 5})};
  EXPECT_EQ(kernel_work({"gemm", gemm_t, &attrs, nullptr}).flops, 2.0 * 3 * 5 * 7);
  attrs = {};
  // attention over [B=1, H=2, S=8, D=4]: 4 * B*H*S*S*D.
  const cpu::TensorView attention[] = {view({1, 2, 8, 4}), view({1, 2, 8, 4}), view({1, 2, 8, 4}),
                                       view({1, 2, 8, 4}), view({1, 2, 8})};
  EXPECT_EQ(kernel_work({"attention", attention, &attrs, nullptr}).flops, 4.0 * 2 * 8 * 8 * 4);
  // Elementwise: one FLOP per element of the largest tensor; bf16 is 2 bytes.
  const cpu::TensorView add[] = {view({6}, DType::kBF16), view({1}, DType::kBF16),
                                 view({6}, DType::kBF16)};
  w = kernel_work({"add", add, &attrs, nullptr});
  EXPECT_EQ(w.flops, 6);
  EXPECT_EQ(w.bytes, 2.0 * 13);
  // Four tensors do not make a gemm: layernorm's x, gamma, beta, y.
  const cpu::TensorView norm[] = {view({4, 8}), view({8}), view({8}), view({4, 8})};
  EXPECT_EQ(kernel_work({"layernorm", norm, &attrs, nullptr}).flops, 32);
}

TEST(Roofline, TakesTheSlowerOfComputeAndMemoryPlusTheLaunch) {
  const Roofline chip{.gflops = 2, .gbytes_s = 1, .launch_us = 10};
  EXPECT_DOUBLE_EQ(roofline_seconds(chip, {4e9, 1e9}), 2 + 10e-6);  // compute-bound
  EXPECT_DOUBLE_EQ(roofline_seconds(chip, {1e9, 3e9}), 3 + 10e-6);  // memory-bound
}

}  // namespace
}  // namespace polychip::sim
