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

}  // namespace
}  // namespace polychip
