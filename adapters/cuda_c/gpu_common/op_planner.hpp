// Turns one validated op call into the kernel launches that compute it:
// kernel symbol, grid/block, packed arguments. Pure host logic (no driver
// calls), so it is unit-tested on machines without a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernel_catalog.hpp"
#include "kernel_params.hpp"
#include "launch_geometry.hpp"
#include "polychip/adapter_abi.h"

namespace polychip::gpu {

struct OpRequest {
  const CatalogEntry* entry = nullptr;
  std::span<const polychip_tensor> tensors;
  const polychip_op_attrs* attrs = nullptr;
  // Device address of each tensor's element [0,...,0].
  std::span<const uint64_t> addresses;
  // Per-stream resources (see scratch_bytes_needed / OpPlan::checks_indices).
  uint64_t error_word = 0;
  uint64_t scratch = 0;
  uint64_t scratch_bytes = 0;
  int64_t max_shared_bytes = 48 * 1024;
};

struct KernelLaunch {
  std::string symbol;
  LaunchGeometry geometry;
  KernelParams params;
};

struct OpPlan {
  std::vector<std::unique_ptr<KernelLaunch>> launches;  // in order, on one stream
  // The op reads i32/i64 indices: reset the error word before, read it after.
  bool checks_indices = false;
  // For the message when the error word reports a bad index.
  std::string index_name;
  int64_t index_bound = 0;
};

struct PlanResult {
  polychip_status status = POLYCHIP_OK;
  std::string message;  // names the argument when status != OK
  OpPlan plan;
};

// Bytes of per-stream scratch memory the op needs (embedding_backward's f32
// accumulator, attention_backward's row deltas); 0 for most ops.
uint64_t scratch_bytes_needed(const CatalogEntry& entry, std::span<const polychip_tensor> tensors);

// The call must already satisfy the op contract (the HAL validates it).
PlanResult plan_op(const OpRequest& request);

}  // namespace polychip::gpu
