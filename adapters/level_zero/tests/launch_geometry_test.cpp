#include "launch_geometry.hpp"

#include <gtest/gtest.h>

namespace polychip::level_zero {
namespace {

TEST(LaunchGeometry, OneDimensionalRoundsUpToWholeGroups) {
  LaunchGeometry g;
  std::string error;
  ASSERT_TRUE(geometry_1d(1000, 256, 1u << 20, &g, &error));
  EXPECT_EQ(g.group_size[0], 256u);
  EXPECT_EQ(g.group_count[0], 4u);  // 1024 >= 1000 work-items
  EXPECT_EQ(g.group_count[1], 1u);
  ASSERT_TRUE(geometry_1d(3, 256, 1u << 20, &g, &error));
  EXPECT_EQ(g.group_size[0], 3u);  // small launches use one small group
  EXPECT_EQ(g.group_count[0], 1u);
  ASSERT_TRUE(geometry_1d(256, 256, 1u << 20, &g, &error));
  EXPECT_EQ(g.group_count[0], 1u);
  ASSERT_TRUE(geometry_1d(257, 256, 1u << 20, &g, &error));
  EXPECT_EQ(g.group_count[0], 2u);
}

TEST(LaunchGeometry, TooManyGroupsIsAnErrorNamingTheLimit) {
  LaunchGeometry g;
  std::string error;
  EXPECT_FALSE(geometry_1d(uint64_t{1} << 40, 256, 65535, &g, &error));
  EXPECT_NE(error.find("65535"), std::string::npos) << error;
}

TEST(LaunchGeometry, TiledGemmCoversEveryOutputOnce) {
  LaunchGeometry g;
  std::string error;
  ASSERT_TRUE(geometry_gemm_tiled(70, 130, 3, 1u << 20, &g, &error));
  EXPECT_EQ(g.group_size[0], 8u);
  EXPECT_EQ(g.group_size[1], 8u);
  EXPECT_EQ(g.group_count[0], 3u);  // ceil(130 / 64) column blocks
  EXPECT_EQ(g.group_count[1], 2u);  // ceil(70 / 64) row blocks
  EXPECT_EQ(g.group_count[2], 3u);  // batch
  EXPECT_FALSE(geometry_gemm_tiled(64, 64, 100000, 65535, &g, &error));
}

}  // namespace
}  // namespace polychip::level_zero
