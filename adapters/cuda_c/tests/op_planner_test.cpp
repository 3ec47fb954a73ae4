#include "gpu_common/op_planner.hpp"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "../kernels/kernel_abi.h"
#include "polychip/op_contract.hpp"

namespace polychip::gpu {
namespace {

polychip_tensor dense(polychip_dtype dtype, std::vector<int64_t> shape) {
  polychip_tensor t{};
  t.struct_size = sizeof t;
  t.dtype = dtype;
  t.rank = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.shape[d] = shape[d];
    t.strides[d] = stride;
    stride *= shape[d];
  }
  return t;
}

template <typename T>
T arg(const KernelLaunch& l, size_t k) {
  T v;
  std::memcpy(&v, const_cast<KernelParams&>(l.params).pointers()[k], sizeof v);
  return v;
}

// A request with addresses 0x1000, 0x2000, ... so tests can tell tensors apart.
struct Call {
  Call(const char* op, std::vector<polychip_tensor> ts) : tensors(std::move(ts)) {
    attrs = default_attrs(*find_op(op));
    for (size_t k = 0; k < tensors.size(); ++k) addresses.push_back(0x1000 * (k + 1));
    request.entry = find_kernel(op);
    request.attrs = &attrs;
  }
  PlanResult plan() {
    request.tensors = tensors;
    request.addresses = addresses;
    return plan_op(request);
  }
  std::vector<polychip_tensor> tensors;
  std::vector<uint64_t> addresses;
  polychip_op_attrs attrs;
  OpRequest request;
};

constexpr auto F32 = POLYCHIP_DTYPE_F32;
constexpr auto F16 = POLYCHIP_DTYPE_F16;
constexpr auto F64 = POLYCHIP_DTYPE_F64;

TEST(OpPlanner, GemmPacksSizesTransposesAndScalars) {
  Call c("gemm", {dense(F16, {4, 7, 5}), dense(F16, {4, 3, 5}), dense(F16, {4, 7, 3}),
                  dense(F16, {4, 7, 3})});
  c.attrs.ints[attr::kTransB] = 1;
  c.attrs.floats[attr::kAlpha] = 2.0;
  c.attrs.floats[attr::kBeta] = 0.5;
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK) << r.message;
  ASSERT_EQ(r.plan.launches.size(), 1u);
  const auto& l = *r.plan.launches[0];
  EXPECT_EQ(l.symbol, "pc_gemm_f16");
  EXPECT_EQ(l.geometry.grid.x, 1u);
  EXPECT_EQ(l.geometry.grid.y, 1u);
  EXPECT_EQ(l.geometry.grid.z, 4u);
  ASSERT_EQ(const_cast<KernelParams&>(l.params).count(), 12u);
  // a, b, c, y
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(arg<uint64_t>(l, k), 0x1000u * (k + 1));
  EXPECT_EQ(arg<long long>(l, 4), 4);  // batch
  EXPECT_EQ(arg<long long>(l, 5), 7);  // m
  EXPECT_EQ(arg<long long>(l, 6), 3);  // n (b is [N, K] when trans_b)
  EXPECT_EQ(arg<long long>(l, 7), 5);  // k
  EXPECT_EQ(arg<int>(l, 8), 0);
  EXPECT_EQ(arg<int>(l, 9), 1);
  EXPECT_EQ(arg<double>(l, 10), 2.0);
  EXPECT_EQ(arg<double>(l, 11), 0.5);
  EXPECT_FALSE(r.plan.checks_indices);
}

TEST(OpPlanner, UnaryCarriesOpCodeAndGeluForm) {
  Call c("gelu", {dense(F32, {1000}), dense(F32, {1000})});
  c.attrs.ints[attr::kGeluApproximate] = 1;
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK) << r.message;
  const auto& l = *r.plan.launches[0];
  EXPECT_EQ(l.symbol, "pc_unary_f32");
  EXPECT_EQ(l.geometry.grid.x, 4u);
  EXPECT_EQ(arg<pc_tensor_desc>(l, 0).address, 0x1000u);
  EXPECT_EQ(arg<pc_tensor_desc>(l, 1).contiguous, 1);
  EXPECT_EQ(arg<long long>(l, 2), 1000);
  EXPECT_EQ(arg<int>(l, 3), PC_UNARY_GELU);
  EXPECT_EQ(arg<int>(l, 4), 1);
}

TEST(OpPlanner, CastPassesBothDtypes) {
  Call c("cast", {dense(F32, {3}), dense(POLYCHIP_DTYPE_F8E4M3, {3})});
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK) << r.message;
  const auto& l = *r.plan.launches[0];
  EXPECT_EQ(l.symbol, "pc_cast");
  EXPECT_EQ(arg<int>(l, 1), PC_DTYPE_F32);
  EXPECT_EQ(arg<int>(l, 3), PC_DTYPE_F8E4M3);
  EXPECT_EQ(arg<long long>(l, 4), 3);
}

TEST(OpPlanner, ReductionNormalizesTheAxis) {
  Call c("reduce_max", {dense(F64, {2, 3, 4}), dense(F64, {2, 1, 4})});
  c.attrs.ints[attr::kAxis] = -2;
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK) << r.message;
  const auto& l = *r.plan.launches[0];
  EXPECT_EQ(l.symbol, "pc_reduce_f64");
  EXPECT_EQ(l.geometry.grid.x, 8u);  // one block per output element
  EXPECT_EQ(arg<long long>(l, 2), 8);
  EXPECT_EQ(arg<int>(l, 3), 1);
  EXPECT_EQ(arg<int>(l, 4), PC_REDUCE_MAX);
}

TEST(OpPlanner, ArgmaxTellsTheIndexWidth) {
  Call c("argmax", {dense(F32, {5, 6}), dense(POLYCHIP_DTYPE_I32, {5, 1})});
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK) << r.message;
  EXPECT_EQ(r.plan.launches[0]->symbol, "pc_argmax_f32");
  EXPECT_EQ(arg<int>(*r.plan.launches[0], 4), 0);
}

TEST(OpPlanner, SoftmaxSplitsOuterAxisInner) {
  Call c("log_softmax", {dense(F32, {2, 5, 3}), dense(F32, {2, 5, 3})});
  c.attrs.ints[attr::kAxis] = 1;
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK) << r.message;
  const auto& l = *r.plan.launches[0];
  EXPECT_EQ(arg<long long>(l, 2), 6);  // rows = outer * inner
  EXPECT_EQ(arg<long long>(l, 3), 5);  // len
  EXPECT_EQ(arg<long long>(l, 4), 3);  // inner
  EXPECT_EQ(arg<int>(l, 5), PC_LOG_SOFTMAX);
}

TEST(OpPlanner, RmsnormHasNoMeanOrBeta) {
  Call c("rmsnorm", {dense(F32, {4, 8}), dense(F32, {8}), dense(F32, {4, 8}), dense(F32, {4})});
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK) << r.message;
  const auto& l = *r.plan.launches[0];
  EXPECT_EQ(l.symbol, "pc_norm_forward_f32");
  EXPECT_EQ(arg<uint64_t>(l, 2), 0u);       // beta
  EXPECT_EQ(arg<uint64_t>(l, 3), 0x3000u);  // y
  EXPECT_EQ(arg<uint64_t>(l, 4), 0u);       // mean
  EXPECT_EQ(arg<uint64_t>(l, 5), 0x4000u);  // rstd
  EXPECT_EQ(arg<int>(l, 9), 1);
}

TEST(OpPlanner, LayernormBackwardLaunchesRowsThenColumns) {
  Call c("layernorm_backward",
         {dense(F32, {4, 8}), dense(F32, {4, 8}), dense(F32, {8}), dense(F32, {4}), dense(F32, {4}),
          dense(F32, {4, 8}), dense(F32, {8}), dense(F32, {8})});
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK) << r.message;
  ASSERT_EQ(r.plan.launches.size(), 2u);
  EXPECT_EQ(r.plan.launches[0]->geometry.grid.x, 4u);
  EXPECT_EQ(r.plan.launches[1]->geometry.grid.x, 8u);
  EXPECT_EQ(arg<uint64_t>(*r.plan.launches[1], 4), 0x7000u);  // dgamma
  EXPECT_EQ(arg<uint64_t>(*r.plan.launches[1], 5), 0x8000u);  // dbeta
}

TEST(OpPlanner, IndexOpsUseTheErrorWord) {
  Call c("cross_entropy", {dense(F32, {3, 10}), dense(POLYCHIP_DTYPE_I64, {3}), dense(F32, {3})});
  c.request.error_word = 0xe000;
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK) << r.message;
  EXPECT_TRUE(r.plan.checks_indices);
  EXPECT_EQ(r.plan.index_name, "targets");
  EXPECT_EQ(r.plan.index_bound, 10);
  const auto& l = *r.plan.launches[0];
  EXPECT_EQ(arg<int>(l, 5), 1);
  EXPECT_EQ(arg<uint64_t>(l, 6), 0xe000u);
}

TEST(OpPlanner, EmbeddingBackwardNeedsScratch) {
  std::vector<polychip_tensor> ts{dense(POLYCHIP_DTYPE_I32, {6}), dense(F16, {6, 4}),
                                  dense(F16, {10, 4})};
  EXPECT_EQ(scratch_bytes_needed(*find_kernel("embedding_backward"), ts), 10u * 4 * 4);
  Call c("embedding_backward", ts);
  EXPECT_EQ(c.plan().status, POLYCHIP_INTERNAL);  // no scratch given
  c.request.scratch = 0xf000;
  c.request.scratch_bytes = 160;
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK) << r.message;
  EXPECT_EQ(r.plan.launches[0]->symbol, "pc_embedding_backward_f16");
  EXPECT_EQ(arg<uint64_t>(*r.plan.launches[0], 7), 0xf000u);
}

TEST(OpPlanner, AttentionTooLongForSharedMemoryIsUnsupported) {
  auto q = dense(F32, {1, 2, 20000, 8});
  auto lse = dense(F32, {1, 2, 20000});
  Call c("attention", {q, q, q, q, lse});
  auto r = c.plan();
  EXPECT_EQ(r.status, POLYCHIP_UNSUPPORTED);
  EXPECT_NE(r.message.find("attention"), std::string::npos) << r.message;
  c.request.max_shared_bytes = 228 * 1024;  // an H100 with opt-in shared memory
  EXPECT_EQ(c.plan().status, POLYCHIP_OK);
}

TEST(OpPlanner, AttentionBackwardUsesDeltaScratch) {
  auto q = dense(F64, {2, 2, 16, 8});
  auto lse = dense(F32, {2, 2, 16});
  std::vector<polychip_tensor> ts{q, q, q, q, q, lse, q, q, q};
  const uint64_t need = scratch_bytes_needed(*find_kernel("attention_backward"), ts);
  EXPECT_EQ(need, 2u * 2 * 16 * 8);
  Call c("attention_backward", ts);
  c.request.scratch = 0xa0000;
  c.request.scratch_bytes = need;
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK) << r.message;
  ASSERT_EQ(r.plan.launches.size(), 2u);
  EXPECT_EQ(arg<uint64_t>(*r.plan.launches[0], 7), 0xa0000u);
  EXPECT_EQ(arg<uint64_t>(*r.plan.launches[1], 5), 0xa0000u);
  EXPECT_EQ(r.plan.launches[1]->geometry.shared_bytes, 2u * 16 * 8);
}

TEST(OpPlanner, AdamwPrecomputesBiasCorrections) {
  Call c("adamw", {dense(F32, {9}), dense(POLYCHIP_DTYPE_BF16, {9}), dense(F32, {9}),
                   dense(F32, {9}), dense(F32, {9}), dense(F32, {9}), dense(F32, {9})});
  c.attrs.ints[attr::kStep] = 2;
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK) << r.message;
  const auto& l = *r.plan.launches[0];
  EXPECT_EQ(l.symbol, "pc_adamw_bf16");
  EXPECT_FLOAT_EQ(arg<float>(l, 13), 1.0f - 0.9f * 0.9f);
  EXPECT_FLOAT_EQ(arg<float>(l, 14), static_cast<float>(1.0 - 0.999 * 0.999));
}

TEST(OpPlanner, EmptyTensorsLaunchNothing) {
  Call c("add", {dense(F32, {0, 4}), dense(F32, {0, 4}), dense(F32, {0, 4})});
  auto r = c.plan();
  ASSERT_EQ(r.status, POLYCHIP_OK);
  EXPECT_EQ(r.plan.launches[0]->geometry.blocks(), 0u);
}

TEST(OpPlanner, RejectsMismatchedAddresses) {
  Call c("add", {dense(F32, {2}), dense(F32, {2}), dense(F32, {2})});
  c.addresses.pop_back();
  EXPECT_EQ(c.plan().status, POLYCHIP_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace polychip::gpu
