// Grid and block sizes of each kernel family (kernel_abi.h fixes the block
// shapes the kernels are written for).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace polychip::gpu {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

struct LaunchGeometry {
  Dim3 grid;
  Dim3 block;
  uint32_t shared_bytes = 0;  // dynamic shared memory
  // Blocks in the grid; 0 means there is nothing to do (skip the launch).
  uint64_t blocks() const { return uint64_t{grid.x} * grid.y * grid.z; }
};

// Grid-stride kernels never need more blocks than this: each thread then
// loops. Keeps every grid within the limits of both vendors.
inline constexpr uint32_t kMaxGridBlocks = 65535;

// One thread per element: PC_BLOCK_THREADS per block, grid capped.
LaunchGeometry elementwise_geometry(int64_t elements);

// One block of PC_BLOCK_THREADS per row (reductions, softmax, norms, losses,
// attention rows), grid capped.
LaunchGeometry row_geometry(int64_t rows);

// gemm: PC_GEMM_TILE^2 threads per block, one block per output tile, batch
// over z (capped; the kernel loops). nullopt when the m tiles exceed the
// y-dimension limit of 65535 (m > 1048560) or n tiles exceed 2^31 - 1.
std::optional<LaunchGeometry> gemm_geometry(int64_t m, int64_t n, int64_t batch);

// attention kernels keep `values_per_row` x seq accumulation values per
// block in dynamic shared memory. nullopt (and *why) when that exceeds
// `max_shared_bytes` minus the kernels' static use.
std::optional<LaunchGeometry> attention_geometry(int64_t rows, int64_t seq, int values_per_row,
                                                 size_t accumulator_bytes, int64_t max_shared_bytes,
                                                 std::string* why);

}  // namespace polychip::gpu
