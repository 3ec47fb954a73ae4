#include "launch_geometry.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace polychip::level_zero {

bool geometry_1d(uint64_t work_items, uint32_t group_size, uint64_t max_group_count,
                 LaunchGeometry* out, std::string* error) {
  uint64_t g =
      std::max<uint64_t>(1, std::min<uint64_t>(group_size, std::max<uint64_t>(work_items, 1)));
  uint64_t groups = (work_items + g - 1) / g;
  if (groups > max_group_count || groups > UINT32_MAX) {
    *error = fmt::format("{} work-items need {} groups of {}, more than the device's {}",
                         work_items, groups, g, max_group_count);
    return false;
  }
  *out = LaunchGeometry{};
  out->group_size[0] = static_cast<uint32_t>(g);
  out->group_count[0] = static_cast<uint32_t>(groups);
  return true;
}

bool geometry_gemm_tiled(uint64_t m, uint64_t n, uint64_t batch, uint64_t max_group_count,
                         LaunchGeometry* out, std::string* error) {
  constexpr uint64_t kTile = 64, kGroup = 8;  // opencl_c/gemm.cl
  uint64_t gx = (n + kTile - 1) / kTile, gy = (m + kTile - 1) / kTile;
  for (uint64_t c : {gx, gy, batch})
    if (c > max_group_count || c > UINT32_MAX) {
      *error = fmt::format(
          "gemm of {}x{} (batch {}) needs {} groups in one dimension, more "
          "than the device's {}",
          m, n, batch, c, max_group_count);
      return false;
    }
  *out = LaunchGeometry{};
  out->group_size[0] = out->group_size[1] = static_cast<uint32_t>(kGroup);
  out->group_count[0] = static_cast<uint32_t>(gx);
  out->group_count[1] = static_cast<uint32_t>(gy);
  out->group_count[2] = static_cast<uint32_t>(batch);
  return true;
}

}  // namespace polychip::level_zero
