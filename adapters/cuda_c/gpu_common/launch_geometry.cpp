#include "launch_geometry.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "../kernels/kernel_abi.h"

namespace polychip::gpu {

namespace {

uint32_t capped_blocks(int64_t wanted) {
  if (wanted <= 0) return 0;
  return static_cast<uint32_t>(std::min<int64_t>(wanted, kMaxGridBlocks));
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

LaunchGeometry elementwise_geometry(int64_t elements) {
  LaunchGeometry g;
  g.block.x = PC_BLOCK_THREADS;
  g.grid.x = capped_blocks(ceil_div(std::max<int64_t>(elements, 0), PC_BLOCK_THREADS));
  return g;
}

LaunchGeometry row_geometry(int64_t rows) {
  LaunchGeometry g;
  g.block.x = PC_BLOCK_THREADS;
  g.grid.x = capped_blocks(rows);
  return g;
}

std::optional<LaunchGeometry> gemm_geometry(int64_t m, int64_t n, int64_t batch) {
  LaunchGeometry g;
  g.block.x = PC_GEMM_TILE;
  g.block.y = PC_GEMM_TILE;
  if (m <= 0 || n <= 0 || batch <= 0) {
    g.grid = {0, 0, 0};
    return g;
  }
  const int64_t tiles_n = ceil_div(n, PC_GEMM_TILE), tiles_m = ceil_div(m, PC_GEMM_TILE);
  if (tiles_m > 65535 || tiles_n > 2147483647) return std::nullopt;
  g.grid.x = static_cast<uint32_t>(tiles_n);
  g.grid.y = static_cast<uint32_t>(tiles_m);
  g.grid.z = capped_blocks(batch);
  return g;
}

std::optional<LaunchGeometry> attention_geometry(int64_t rows, int64_t seq, int values_per_row,
                                                 size_t accumulator_bytes, int64_t max_shared_bytes,
                                                 std::string* why) {
  // The kernels also use PC_BLOCK_THREADS accumulators of static shared memory.
  const int64_t static_bytes = int64_t{PC_BLOCK_THREADS} * static_cast<int64_t>(accumulator_bytes);
  const int64_t dynamic_bytes = seq * values_per_row * static_cast<int64_t>(accumulator_bytes);
  if (static_bytes + dynamic_bytes > max_shared_bytes) {
    if (why)
      *why = fmt::format(
          "attention with sequence length {} needs {} bytes of shared memory per block; the "
          "device offers {}",
          seq, static_bytes + dynamic_bytes, max_shared_bytes);
    return std::nullopt;
  }
  LaunchGeometry g = row_geometry(rows);
  g.shared_bytes = static_cast<uint32_t>(dynamic_bytes);
  return g;
}

}  // namespace polychip::gpu
