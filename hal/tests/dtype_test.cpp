// Bit-exact dtype conversions against known encodings.
#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "polychip/dtype.hpp"
#include "polychip/error.hpp"

namespace polychip {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(DTypeTest, F16KnownEncodings) {
  EXPECT_EQ(f64_to_f16_bits(1.0), 0x3C00);
  EXPECT_EQ(f64_to_f16_bits(-2.0), 0xC000);
  EXPECT_EQ(f64_to_f16_bits(65504.0), 0x7BFF);   // max finite
  EXPECT_EQ(f64_to_f16_bits(65519.99), 0x7BFF);  // below the rounding midpoint
  EXPECT_EQ(f64_to_f16_bits(65520.0), 0x7C00);   // midpoint, ties to even -> Inf
  EXPECT_EQ(f64_to_f16_bits(kInf), 0x7C00);
  EXPECT_EQ(f64_to_f16_bits(-kInf), 0xFC00);
  EXPECT_EQ(f64_to_f16_bits(0.0), 0x0000);
  EXPECT_EQ(f64_to_f16_bits(-0.0), 0x8000);
  EXPECT_EQ(f64_to_f16_bits(std::ldexp(1.0, -24)), 0x0001);        // smallest subnormal
  EXPECT_EQ(f64_to_f16_bits(std::ldexp(1.0, -25)), 0x0000);        // half of it: tie to even 0
  EXPECT_EQ(f64_to_f16_bits(std::ldexp(3.0, -26)), 0x0001);        // 0.75 ulp rounds up
  EXPECT_EQ(f64_to_f16_bits(std::ldexp(1.0, -14)), 0x0400);        // smallest normal
  EXPECT_EQ(f64_to_f16_bits(std::ldexp(1023.5, -24)), 0x0400);     // subnormal carries to normal
  EXPECT_EQ(f64_to_f16_bits(1.0 + std::ldexp(1.0, -11)), 0x3C00);  // tie -> even (down)
  EXPECT_EQ(f64_to_f16_bits(1.0 + 3 * std::ldexp(1.0, -11)), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(f64_to_f16_bits(kNaN) & 0x7C00, 0x7C00);
  EXPECT_NE(f64_to_f16_bits(kNaN) & 0x03FF, 0);
  EXPECT_EQ(f16_bits_to_f64(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(f16_bits_to_f64(0x7BFF), 65504.0);
  EXPECT_TRUE(std::isinf(f16_bits_to_f64(0xFC00)) && f16_bits_to_f64(0xFC00) < 0);
  EXPECT_TRUE(std::isnan(f16_bits_to_f64(0x7E00)));
  EXPECT_TRUE(std::signbit(f16_bits_to_f64(0x8000)));
}

TEST(DTypeTest, F16RoundTripsEveryEncoding) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    double v = f16_bits_to_f64(static_cast<uint16_t>(b));
    if (std::isnan(v)) continue;
    ASSERT_EQ(f64_to_f16_bits(v), b) << std::hex << b;
  }
}

TEST(DTypeTest, BF16KnownEncodings) {
  EXPECT_EQ(f64_to_bf16_bits(1.0), 0x3F80);
  EXPECT_EQ(f64_to_bf16_bits(-1.0), 0xBF80);
  EXPECT_EQ(f64_to_bf16_bits(1.0 + std::ldexp(1.0, -8)), 0x3F80);      // tie -> even
  EXPECT_EQ(f64_to_bf16_bits(1.0 + 3 * std::ldexp(1.0, -8)), 0x3F82);  // tie -> even up
  EXPECT_EQ(f64_to_bf16_bits(3.0e38), 0x7F62);
  EXPECT_EQ(f64_to_bf16_bits(3.4e38), 0x7F80);                 // beyond max 3.3895e38 -> Inf
  EXPECT_EQ(f64_to_bf16_bits(std::ldexp(1.0, -133)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f64_to_bf16_bits(-kInf), 0xFF80);
  EXPECT_EQ(f64_to_bf16_bits(kNaN), 0x7FC0);
  EXPECT_EQ(f64_to_bf16_bits(-kNaN) & 0x8000, 0x8000);
  // Agrees with truncation of the f32 pattern when the dropped half is < 0x8000.
  float f = 3.14159265f;
  uint32_t fb;
  std::memcpy(&fb, &f, 4);
  EXPECT_EQ(f32_to_bf16_bits(f), static_cast<uint16_t>((fb + 0x7FFF + ((fb >> 16) & 1)) >> 16));
}

TEST(DTypeTest, BF16RoundTripsEveryEncoding) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    double v = bf16_bits_to_f64(static_cast<uint16_t>(b));
    if (std::isnan(v)) continue;
    ASSERT_EQ(f64_to_bf16_bits(v), b) << std::hex << b;
  }
}

TEST(DTypeTest, Fp8E4M3) {
  EXPECT_EQ(f64_to_f8e4m3_bits(1.0), 0x38);
  EXPECT_EQ(f64_to_f8e4m3_bits(448.0), 0x7E);  // max finite
  EXPECT_EQ(f64_to_f8e4m3_bits(464.0), 0x7E);  // tie between 448 and (unrepresentable) 480 -> even
  EXPECT_EQ(f64_to_f8e4m3_bits(480.0), 0x7F);  // overflow -> NaN (no Inf in E4M3FN)
  EXPECT_EQ(f64_to_f8e4m3_bits(kInf), 0x7F);
  EXPECT_EQ(f64_to_f8e4m3_bits(-kInf), 0xFF);
  EXPECT_EQ(f64_to_f8e4m3_bits(std::ldexp(1.0, -9)), 0x01);  // smallest subnormal
  EXPECT_EQ(f8e4m3_bits_to_f64(0x7E), 448.0);
  EXPECT_TRUE(std::isnan(f8e4m3_bits_to_f64(0x7F)));
  EXPECT_EQ(f8e4m3_bits_to_f64(0x78), 256.0);  // exponent 15 is a normal binade
  for (uint32_t b = 0; b < 0x100; ++b) {
    double v = f8e4m3_bits_to_f64(static_cast<uint8_t>(b));
    if (!std::isnan(v)) {
      ASSERT_EQ(f64_to_f8e4m3_bits(v), b);
    }
  }
}

TEST(DTypeTest, Fp8E5M2) {
  EXPECT_EQ(f64_to_f8e5m2_bits(1.0), 0x3C);
  EXPECT_EQ(f64_to_f8e5m2_bits(57344.0), 0x7B);
  EXPECT_EQ(f64_to_f8e5m2_bits(61440.0), 0x7C);  // midpoint to even -> Inf
  EXPECT_EQ(f64_to_f8e5m2_bits(std::ldexp(1.0, -16)), 0x01);
  EXPECT_TRUE(std::isinf(f8e5m2_bits_to_f64(0x7C)));
  for (uint32_t b = 0; b < 0x100; ++b) {
    double v = f8e5m2_bits_to_f64(static_cast<uint8_t>(b));
    if (!std::isnan(v)) {
      ASSERT_EQ(f64_to_f8e5m2_bits(v), b);
    }
  }
}

// Far past the largest finite value every format overflows the same way as
// just past it (a wrong largest-finite pattern shows only there); far below
// the smallest subnormal, including where all 53 significand bits are
// dropped at once, it rounds to a zero of the value's sign.
TEST(DTypeTest, FarOutOfRangeValuesOverflowAndUnderflowCleanly) {
  for (double big : {std::ldexp(1.0, 17), 1e10, std::numeric_limits<double>::max()}) {
    EXPECT_EQ(f64_to_f16_bits(big), 0x7C00) << big;
    EXPECT_EQ(f64_to_f16_bits(-big), 0xFC00) << big;
    EXPECT_EQ(f64_to_f8e5m2_bits(big), 0x7C) << big;
    EXPECT_EQ(f64_to_f8e4m3_bits(big), 0x7F) << big;  // no Inf in E4M3FN: NaN
    EXPECT_EQ(f64_to_f8e4m3_bits(-big), 0xFF) << big;
  }
  EXPECT_EQ(f64_to_bf16_bits(std::numeric_limits<double>::max()), 0x7F80);
  EXPECT_EQ(f64_to_bf16_bits(-std::ldexp(1.0, 200)), 0xFF80);
  // f16 drops 42 + (-14 - e) bits of 2^e: all 64 at e = -36; bf16 at e = -145.
  for (int e = -30; e >= -1074; --e) {
    const double tiny = std::ldexp(1.5, e);
    ASSERT_EQ(f64_to_f16_bits(tiny), 0x0000) << e;
    ASSERT_EQ(f64_to_f16_bits(-tiny), 0x8000) << e;
    ASSERT_EQ(f64_to_f8e4m3_bits(tiny), 0x00) << e;
    ASSERT_EQ(f64_to_f8e5m2_bits(-tiny), 0x80) << e;
    if (e <= -140) {
      ASSERT_EQ(f64_to_bf16_bits(tiny), 0x0000) << e;
    }
  }
}

TEST(DTypeTest, ValidCodesAndFloatingDTypes) {
  EXPECT_FALSE(is_valid_dtype(POLYCHIP_DTYPE_F64 - 1));
  EXPECT_TRUE(is_valid_dtype(POLYCHIP_DTYPE_F64));
  EXPECT_TRUE(is_valid_dtype(POLYCHIP_DTYPE_COUNT_ - 1));
  EXPECT_FALSE(is_valid_dtype(POLYCHIP_DTYPE_COUNT_));
  for (DType d : kAllDTypes) {
    const std::string_view name = dtype_name(d);
    EXPECT_EQ(is_floating(d), name[0] == 'f' || name == "bf16") << name;
  }
}

TEST(DTypeTest, IntegersAndBool) {
  unsigned char buf[8];
  store_from_f64(300.0, buf, DType::kI8);
  EXPECT_EQ(load_as_f64(buf, DType::kI8), 127.0);
  store_from_f64(-2.5, buf, DType::kI32);
  EXPECT_EQ(load_as_f64(buf, DType::kI32), -2.0);  // nearest, ties to even
  store_from_f64(kNaN, buf, DType::kI64);
  EXPECT_EQ(load_as_f64(buf, DType::kI64), 0.0);
  // 2^63 is INT64_MAX as a double; converting it unclamped is undefined.
  int64_t i64 = 0;
  store_from_f64(std::ldexp(1.0, 63), &i64, DType::kI64);
  EXPECT_EQ(i64, std::numeric_limits<int64_t>::max());
  store_from_f64(-std::ldexp(1.0, 63), &i64, DType::kI64);
  EXPECT_EQ(i64, std::numeric_limits<int64_t>::min());
  store_from_f64(-1.0, buf, DType::kU8);
  EXPECT_EQ(load_as_f64(buf, DType::kU8), 0.0);
  store_from_f64(0.25, buf, DType::kBool);
  EXPECT_EQ(load_as_f64(buf, DType::kBool), 1.0);
  EXPECT_EQ(round_to_dtype(0.1, DType::kF32), static_cast<double>(0.1f));
}

TEST(DTypeTest, NamesParseAndUnknownDTypeIsAClearError) {
  for (DType d : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(d)), d);
  try {
    parse_dtype("f24");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.message().find("unknown dtype 'f24'"), std::string::npos);
    EXPECT_NE(e.message().find("bf16"), std::string::npos);
  }
  EXPECT_FALSE(is_valid_dtype(0));
  EXPECT_FALSE(is_valid_dtype(99));
  EXPECT_THROW(dtype_size(static_cast<DType>(99)), Error);
}

}  // namespace
}  // namespace polychip
