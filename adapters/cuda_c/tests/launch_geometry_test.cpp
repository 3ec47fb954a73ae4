#include "gpu_common/launch_geometry.hpp"

#include <gtest/gtest.h>

#include "../kernels/kernel_abi.h"

namespace polychip::gpu {
namespace {

TEST(LaunchGeometry, ElementwiseCoversEveryElementAndCapsTheGrid) {
  EXPECT_EQ(elementwise_geometry(0).blocks(), 0u);
  auto g = elementwise_geometry(1);
  EXPECT_EQ(g.grid.x, 1u);
  EXPECT_EQ(g.block.x, static_cast<uint32_t>(PC_BLOCK_THREADS));
  EXPECT_EQ(elementwise_geometry(256).grid.x, 1u);
  EXPECT_EQ(elementwise_geometry(257).grid.x, 2u);
  // Beyond the cap the kernel's grid-stride loop takes over.
  EXPECT_EQ(elementwise_geometry(int64_t{1} << 40).grid.x, kMaxGridBlocks);
  EXPECT_EQ(elementwise_geometry(-5).blocks(), 0u);
}

TEST(LaunchGeometry, RowsGetOneBlockEach) {
  EXPECT_EQ(row_geometry(3).grid.x, 3u);
  EXPECT_EQ(row_geometry(3).block.x, static_cast<uint32_t>(PC_BLOCK_THREADS));
  EXPECT_EQ(row_geometry(int64_t{1} << 33).grid.x, kMaxGridBlocks);
}

TEST(LaunchGeometry, GemmTilesTheOutput) {
  auto g = gemm_geometry(33, 16, 5);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->grid.x, 1u);  // n tiles
  EXPECT_EQ(g->grid.y, 3u);  // m tiles
  EXPECT_EQ(g->grid.z, 5u);
  EXPECT_EQ(g->block.x, static_cast<uint32_t>(PC_GEMM_TILE));
  EXPECT_EQ(g->block.y, static_cast<uint32_t>(PC_GEMM_TILE));
  EXPECT_EQ(gemm_geometry(0, 8, 1)->blocks(), 0u);
  EXPECT_EQ(gemm_geometry(8, 8, 100000)->grid.z, kMaxGridBlocks);
  EXPECT_TRUE(gemm_geometry(65535LL * 16, 1, 1));
  EXPECT_FALSE(gemm_geometry(65535LL * 16 + 1, 1, 1));
}

TEST(LaunchGeometry, AttentionChecksSharedMemory) {
  std::string why;
  // f32: 256 * 4 static + 1024 * 4 dynamic = 5 KiB.
  auto g = attention_geometry(10, 1024, 1, 4, 48 * 1024, &why);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->shared_bytes, 4096u);
  EXPECT_EQ(g->grid.x, 10u);
  // Backward keeps two values per key: 2 * 8 * 3000 + 2048 > 48 KiB for f64.
  EXPECT_FALSE(attention_geometry(10, 3000, 2, 8, 48 * 1024, &why));
  EXPECT_NE(why.find("sequence length 3000"), std::string::npos) << why;
}

}  // namespace
}  // namespace polychip::gpu
