// Typed host accessors of Tensor: a C++ element type that does not hold the
// tensor's dtype, or host data of the wrong length, is INVALID_ARGUMENT
// naming both, never a read or write past the end of a buffer.
#include <gtest/gtest.h>

#include <cstddef>
#include <span>

#include "polychip/hal.hpp"
#include "test_runtime.hpp"

namespace polychip {
namespace {

class HostElementTest : public ::testing::Test {
 protected:
  Runtime rt{testing::cpu_only_options()};
  Device cpu = rt.device("cpu");
};

// Runs `f`, expects INVALID_ARGUMENT whose message holds every one of `parts`.
template <typename F>
void expect_invalid(F f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << e.what();
    for (const char* part : parts)
      EXPECT_NE(e.message().find(part), std::string::npos) << part << " in: " << e.message();
  }
}

TEST_F(HostElementTest, ToVectorOfTheWrongTypeNamesBothDTypes) {
  Tensor f64(cpu, DType::kF64, {4096});
  expect_invalid([&] { f64.to_vector<float>(); },
                 {"to_vector", "the tensor is f64", "float holds f32", "use double"});
  Tensor f32(cpu, DType::kF32, {8});
  expect_invalid([&] { f32.to_vector<double>(); },
                 {"the tensor is f32", "double holds f64", "use float"});
  expect_invalid([&] { f32.to_vector<int32_t>(); }, {"int32_t holds i32 elements (use float)"});
  bool flags[8];
  expect_invalid([&] { f32.copy_to_host(flags); }, {"bool holds bool elements (use float)"});
  Tensor bf16(cpu, DType::kBF16, {3});
  expect_invalid([&] { bf16.to_vector<uint8_t>(); },
                 {"the tensor is bf16", "uint8_t holds f8e4m3/f8e5m2/u8/bool", "use uint16_t"});
}

TEST_F(HostElementTest, MatchingTypesRoundTrip) {
  std::vector<double> d = {1.5, -2.25};
  EXPECT_EQ(Tensor::from_host(cpu, DType::kF64, {2}, d).to_vector<double>(), d);
  std::vector<uint16_t> bits = {0x3F80, 0xC000};
  EXPECT_EQ(Tensor::from_host(cpu, DType::kBF16, {2}, bits.data()).to_vector<uint16_t>(), bits);
  std::vector<uint8_t> flags = {1, 0, 1};
  EXPECT_EQ(Tensor::from_host(cpu, DType::kBool, {3}, flags).to_vector<uint8_t>(), flags);
  std::vector<int64_t> ids = {7, -1};
  Tensor t(cpu, DType::kI64, {2});
  t.copy_from_host(ids);
  std::vector<int64_t> back(2);
  t.copy_to_host(back);
  EXPECT_EQ(back, ids);
}

TEST_F(HostElementTest, TypedPointersOfTheWrongTypeAreRefused) {
  std::vector<float> small(4, 1.0f);
  expect_invalid([&] { Tensor::from_host(cpu, DType::kF64, {4}, small.data()); },
                 {"from_host", "the tensor is f64", "float holds f32"});
  Tensor f64(cpu, DType::kF64, {4});
  expect_invalid([&] { f64.copy_from_host(small.data()); }, {"copy_from_host", "float"});
  expect_invalid([&] { f64.copy_to_host(small.data()); }, {"copy_to_host", "float"});
}

TEST_F(HostElementTest, RangesOfTheWrongLengthAreRefused) {
  std::vector<float> three(3);
  expect_invalid([&] { Tensor::from_host(cpu, DType::kF32, {4}, three); },
                 {"from_host", "3 elements", "the tensor 4"});
  Tensor f32(cpu, DType::kF32, {4});
  expect_invalid([&] { f32.copy_to_host(three); }, {"copy_to_host", "3 elements"});
  expect_invalid([&] { f32.copy_from_host(std::span<const float>(three)); }, {"3 elements"});
  std::vector<std::byte> bytes(15);
  expect_invalid([&] { f32.copy_from_host(bytes); }, {"15 bytes", "the tensor 16"});
  bytes.resize(16);
  EXPECT_NO_THROW(f32.copy_from_host(bytes));  // raw bytes of any dtype
}

TEST_F(HostElementTest, RawBytePointersStayUnchecked) {
  std::vector<char> bytes(8);
  Tensor f64 = Tensor::from_host(cpu, DType::kF64, {1}, bytes.data());
  f64.copy_to_host(bytes.data());
  EXPECT_EQ(f64.to_vector<double>(), std::vector<double>{0.0});
}

}  // namespace
}  // namespace polychip
