// Shapes whose element or byte count does not fit 64 bits are
// INVALID_ARGUMENT naming the shape, never a small buffer behind a huge
// tensor (the count used to wrap around silently).
#include <gtest/gtest.h>

#include <string>

#include "polychip/hal.hpp"
#include "test_runtime.hpp"

namespace polychip {
namespace {

void expect_invalid_shape(auto make, const std::string& part) {
  try {
    make();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << e.what();
    EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
  }
}

TEST(ElementCount, CountsEveryDimension) {
  EXPECT_EQ(element_count({}), 1);
  EXPECT_EQ(element_count({3, 0, 5}), 0);
  EXPECT_EQ(element_count({2, 3, 4}), 24);
  EXPECT_EQ(element_count({int64_t{1} << 31, int64_t{1} << 31}), int64_t{1} << 62);
}

TEST(ElementCount, AnOverflowingShapeIsRefused) {
  const int64_t big = int64_t{1} << 32;
  expect_invalid_shape(
      [&] {
        return element_count({big, big});
      },
      "shape [4294967296, 4294967296] has more elements than 2^63 - 1");
  expect_invalid_shape(
      [] {
        return element_count({2, -1});
      },
      "shape [2, -1] has a negative dimension");
}

TEST(TensorShape, ABufferTooBigToCountIsRefusedBeforeAllocating) {
  Runtime rt{testing::cpu_only_options()};
  Device cpu = rt.device("cpu");
  // 2^62 f32 elements count fine but need 2^64 bytes: the byte count wraps.
  expect_invalid_shape(
      [&] {
        return Tensor(cpu, DType::kF32, {int64_t{1} << 61, 2});
      },
      "needs more than 2^64 bytes");
  expect_invalid_shape(
      [&] {
        return Tensor(cpu, DType::kF32, {1 << 20, 1 << 20, 1 << 20, 1 << 20});
      },
      "more elements than 2^63 - 1");
  expect_invalid_shape([&] { return Tensor(cpu, DType::kF32, {4, -3}); }, "negative dimension");
}

TEST(TensorView, TheMaximumRankConvertsEveryDimension) {
  Runtime rt{testing::cpu_only_options()};
  const Shape shape = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_EQ(shape.size(), size_t{POLYCHIP_MAX_RANK});
  const Shape strides = row_major_strides(shape);
  EXPECT_EQ(strides, (Shape{40320, 20160, 6720, 1680, 336, 56, 8, 1}));
  const polychip_tensor t =
      TensorView(rt.device("cpu"), nullptr, DType::kF32, shape, strides, 12).to_abi();
  EXPECT_EQ(t.rank, POLYCHIP_MAX_RANK);
  EXPECT_EQ(Shape(t.shape, t.shape + POLYCHIP_MAX_RANK), shape);
  EXPECT_EQ(Shape(t.strides, t.strides + POLYCHIP_MAX_RANK), strides);
  EXPECT_EQ(t.memory, nullptr);
  EXPECT_EQ(t.byte_offset, 12u);
}

TEST(TensorView, AStrideCountOtherThanTheRankIsRefusedNamingBoth) {
  Runtime rt{testing::cpu_only_options()};
  expect_invalid_shape(
      [&] {
        return TensorView(rt.device("cpu"), nullptr, DType::kF32, {2}, {1, 1});
      },
      "TensorView: 2 strides for 1 dimensions");
}

// Copying one dimension too many would read the empty shape here.
TEST(TensorView, AScalarConvertsToRankZeroWithNoDimensionSet) {
  Runtime rt{testing::cpu_only_options()};
  const polychip_tensor t = TensorView(rt.device("cpu"), nullptr, DType::kF32, {}, {}).to_abi();
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.shape[0], 0);
  EXPECT_EQ(t.strides[0], 0);
}

}  // namespace
}  // namespace polychip
