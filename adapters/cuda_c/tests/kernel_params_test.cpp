#include "gpu_common/kernel_params.hpp"

#include <cstdint>

#include <gtest/gtest.h>

#include "../kernels/kernel_abi.h"

namespace polychip::gpu {
namespace {

template <typename T>
T read(void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

TEST(KernelParams, EachPointerHoldsItsValueWithNaturalAlignment) {
  KernelParams p;
  p.add(int32_t{7}).add(uint64_t{0x1234567890ull}).add(float{1.5f}).add(double{-2.25});
  ASSERT_EQ(p.count(), 4u);
  EXPECT_EQ(read<int32_t>(p.pointers()[0]), 7);
  EXPECT_EQ(read<uint64_t>(p.pointers()[1]), 0x1234567890ull);
  EXPECT_EQ(read<float>(p.pointers()[2]), 1.5f);
  EXPECT_EQ(read<double>(p.pointers()[3]), -2.25);
  // The int took 4 bytes; the 8-byte value starts on the next multiple of 8.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p.pointers()[1]) % 8, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p.pointers()[3]) % 8, 0u);
  EXPECT_EQ(static_cast<char*>(p.pointers()[1]) - static_cast<char*>(p.pointers()[0]), 8);
  EXPECT_TRUE(p.ok());
}

TEST(KernelParams, StructsAreCopiedWhole) {
  pc_tensor_desc d{};
  d.address = 0xdead0000ull;
  d.rank = 3;
  d.shape[2] = 11;
  d.strides[0] = 99;
  KernelParams p;
  p.add(int32_t{1}).add(d);
  auto back = read<pc_tensor_desc>(p.pointers()[1]);
  EXPECT_EQ(back.address, d.address);
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.shape[2], 11);
  EXPECT_EQ(back.strides[0], 99);
  EXPECT_EQ(sizeof(pc_tensor_desc), 144u);
}

TEST(KernelParams, OverflowIsReportedNotWritten) {
  KernelParams p;
  pc_tensor_desc d{};
  for (int k = 0; k < 28; ++k) p.add(d);  // 28 * 144 = 4032 bytes fit
  EXPECT_TRUE(p.ok());
  p.add(d);
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(p.count(), 28u);
  EXPECT_LE(p.bytes_used(), KernelParams::kCapacity);
}

}  // namespace
}  // namespace polychip::gpu
