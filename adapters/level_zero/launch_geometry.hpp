// Launch geometry for the shared OpenCL C kernels on Level Zero: OpenCL
// takes a global size, Level Zero a group size and a group count, so the
// global size is rounded up to whole groups (the kernels bounds-check).
#pragma once

#include <cstdint>
#include <string>

namespace polychip::level_zero {

struct LaunchGeometry {
  uint32_t group_size[3] = {1, 1, 1};
  uint32_t group_count[3] = {1, 1, 1};
};

// A 1-D launch of `work_items` with `group_size` items per group (clamped
// to [1, work_items] so tiny launches use one small group). Returns false
// with `error` set when the group count exceeds `max_group_count`.
bool geometry_1d(uint64_t work_items, uint32_t group_size, uint64_t max_group_count,
                 LaunchGeometry* out, std::string* error);

// The tiled GEMM kernel: 8x8 groups, each covering a 64x64 block of y,
// one group layer per batch.
bool geometry_gemm_tiled(uint64_t m, uint64_t n, uint64_t batch, uint64_t max_group_count,
                         LaunchGeometry* out, std::string* error);

}  // namespace polychip::level_zero
