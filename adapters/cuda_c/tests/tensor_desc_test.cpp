#include "gpu_common/tensor_desc.hpp"

#include <gtest/gtest.h>

namespace polychip::gpu {
namespace {

polychip_tensor tensor(std::initializer_list<int64_t> shape,
                       std::initializer_list<int64_t> strides) {
  polychip_tensor t{};
  t.struct_size = sizeof t;
  t.dtype = POLYCHIP_DTYPE_F32;
  t.rank = static_cast<int32_t>(shape.size());
  std::copy(shape.begin(), shape.end(), t.shape);
  std::copy(strides.begin(), strides.end(), t.strides);
  return t;
}

TEST(TensorDesc, DenseViewsAreContiguous) {
  auto d = make_tensor_desc(tensor({2, 3}, {3, 1}), 0x1000);
  EXPECT_EQ(d.address, 0x1000u);
  EXPECT_EQ(d.rank, 2);
  EXPECT_EQ(d.contiguous, 1);
  // Strides of size-1 dimensions do not matter.
  EXPECT_EQ(make_tensor_desc(tensor({1, 3}, {77, 1}), 0).contiguous, 1);
}

TEST(TensorDesc, TransposedAndBroadcastViewsAreNot) {
  EXPECT_EQ(make_tensor_desc(tensor({2, 3}, {1, 2}), 0).contiguous, 0);
  auto b = make_tensor_desc(tensor({4, 3}, {0, 1}), 0);
  EXPECT_EQ(b.contiguous, 0);
  EXPECT_EQ(b.strides[0], 0);
}

TEST(TensorDesc, ScalarsBecomeOneElementVectors) {
  auto d = make_tensor_desc(tensor({}, {}), 0x20);
  EXPECT_EQ(d.rank, 1);
  EXPECT_EQ(d.shape[0], 1);
  EXPECT_EQ(element_count(tensor({}, {})), 1);
  EXPECT_EQ(element_count(tensor({2, 0, 5}, {0, 5, 1})), 0);
}

}  // namespace
}  // namespace polychip::gpu
