// The bounds check every adapter and the dispatcher share: where a view
// ends, and the cases that must not wrap around (huge shapes, strides and
// offsets from a caller of the C ABI).
#include "polychip/tensor_bounds.hpp"

#include <gtest/gtest.h>

namespace polychip {
namespace {

polychip_tensor f32(std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides,
                    uint64_t byte_offset = 0) {
  polychip_tensor t{};
  t.struct_size = sizeof t;
  t.dtype = POLYCHIP_DTYPE_F32;
  t.rank = static_cast<int32_t>(shape.size());
  std::copy(shape.begin(), shape.end(), t.shape);
  std::copy(strides.begin(), strides.end(), t.strides);
  t.byte_offset = byte_offset;
  return t;
}

TEST(TensorBounds, TheLastElementMustEndInsideTheMemory) {
  EXPECT_EQ(check_tensor_bounds(f32({4, 3}, {3, 1}), 48, 0), "");
  EXPECT_EQ(check_tensor_bounds(f32({4, 3}, {1, 4}), 48, 0), "");  // transposed: same last byte
  EXPECT_EQ(check_tensor_bounds(f32({4, 3}, {3, 1}, 4), 48, 2),
            "tensor 2 reaches byte 52 but its memory holds 48 bytes");
  EXPECT_EQ(check_tensor_bounds(f32({4, 3}, {0, 1}), 12, 0), "");  // broadcast rows
  EXPECT_EQ(check_tensor_bounds(f32({}, {}), 4, 0), "");           // a scalar
}

TEST(TensorBounds, EmptyTensorsTouchNothing) {
  EXPECT_EQ(check_tensor_bounds(f32({0, 3}, {3, 1}, 1 << 20), 0, 0), "");
  // Wherever the zero stands: the sizes before it would overflow.
  const int64_t big = int64_t{1} << 62;
  EXPECT_EQ(check_tensor_bounds(f32({big, big, 0}, {big, 1, 1}), 0, 0), "");
}

TEST(TensorBounds, ANegativeSizeOrStrideIsRefusedBesideAZeroSize) {
  EXPECT_EQ(check_tensor_bounds(f32({0, -1}, {1, 1}), 64, 0),
            "tensor 0 has a negative size or stride");
  EXPECT_EQ(check_tensor_bounds(f32({-1, 0}, {1, 1}), 64, 0),
            "tensor 0 has a negative size or stride");
  EXPECT_EQ(check_tensor_bounds(f32({0, 2}, {1, -1}), 64, 0),
            "tensor 0 has a negative size or stride");
}

TEST(TensorBounds, HugeViewsAreRefusedWithoutWrappingAround) {
  const int64_t big = int64_t{1} << 62;
  EXPECT_EQ(check_tensor_bounds(f32({big, big}, {big, 1}), 64, 1),
            "tensor 1 spans more than 2^64 elements");
  EXPECT_EQ(check_tensor_bounds(f32({big}, {1}), 64, 0), "tensor 0 reaches beyond byte 2^64");
  EXPECT_EQ(check_tensor_bounds(f32({1}, {1}, ~uint64_t{0}), 64, 0),
            "tensor 0 reaches beyond byte 2^64");
  EXPECT_EQ(check_tensor_bounds(f32({2}, {-1}), 64, 0), "tensor 0 has a negative size or stride");
  polychip_tensor bad_rank = f32({1}, {1});
  bad_rank.rank = POLYCHIP_MAX_RANK + 1;
  EXPECT_EQ(check_tensor_bounds(bad_rank, 64, 3), "tensor 3 has an invalid rank or dtype");
}

TEST(TensorBounds, RankFromZeroToTheMaximumAndOnlyKnownDtypesAreAccepted) {
  polychip_tensor full_rank = f32({}, {});
  full_rank.rank = POLYCHIP_MAX_RANK;
  std::fill_n(full_rank.shape, POLYCHIP_MAX_RANK, 1);
  std::fill_n(full_rank.strides, POLYCHIP_MAX_RANK, 1);
  EXPECT_EQ(check_tensor_bounds(full_rank, 4, 0), "");
  polychip_tensor negative_rank = f32({}, {});
  negative_rank.rank = -1;
  EXPECT_EQ(check_tensor_bounds(negative_rank, 64, 0), "tensor 0 has an invalid rank or dtype");
  polychip_tensor unknown_dtype = f32({1}, {1});
  unknown_dtype.dtype = static_cast<polychip_dtype>(POLYCHIP_DTYPE_COUNT_);
  EXPECT_EQ(check_tensor_bounds(unknown_dtype, 64, 0), "tensor 0 has an invalid rank or dtype");
}

TEST(TensorBounds, ANegativeSizeIsRefusedEvenWithAZeroStride) {
  // (-1 - 1) * 0 spans nothing: only the sign check stops this view.
  EXPECT_EQ(check_tensor_bounds(f32({-1}, {0}), 64, 0), "tensor 0 has a negative size or stride");
}

TEST(TensorBounds, AnOffsetMayEndExactlyAtTheEndOfTheMemory) {
  EXPECT_EQ(check_tensor_bounds(f32({1}, {1}, 60), 64, 0), "");
  EXPECT_EQ(check_tensor_bounds(f32({1}, {1}, 61), 64, 0),
            "tensor 0 reaches byte 65 but its memory holds 64 bytes");
}

TEST(TensorBounds, SpansThatOverflowOnlyWhenAddedAreRefused) {
  // Each dimension spans 2^63 elements (fits); together 2^64 wraps to 0.
  const int64_t quarter = int64_t{1} << 62;
  EXPECT_EQ(check_tensor_bounds(f32({3, 3}, {quarter, quarter}), 64, 0),
            "tensor 0 spans more than 2^64 elements");
}

TEST(TensorBounds, EveryTensorOfACallIsCheckedAgainstItsOwnMemory) {
  // Here a memory handle points to its size in bytes.
  uint64_t sizes[] = {16, 8};
  auto size_of = [](polychip_memory* m) { return *reinterpret_cast<uint64_t*>(m); };
  polychip_tensor tensors[] = {f32({4}, {1}), f32({4}, {1})};
  tensors[0].memory = reinterpret_cast<polychip_memory*>(&sizes[0]);
  tensors[1].memory = reinterpret_cast<polychip_memory*>(&sizes[1]);
  EXPECT_EQ(check_tensors_bounds(tensors, size_of),
            "tensor 1 reaches byte 16 but its memory holds 8 bytes");
  tensors[1].memory = nullptr;  // no memory: 0 bytes
  EXPECT_EQ(check_tensors_bounds(tensors, size_of),
            "tensor 1 reaches byte 16 but its memory holds 0 bytes");
  tensors[1].shape[0] = 0;
  EXPECT_EQ(check_tensors_bounds(tensors, size_of), "");
}

}  // namespace
}  // namespace polychip
