// A vendor library that computes gemm better than the shared tiled kernel
// (cuBLAS for the CUDA adapter). The shared adapter asks it first and falls
// back to the tiled kernel when it declines.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "gpu_driver.hpp"
#include "status.hpp"

namespace polychip::gpu {

struct GemmCall {
  int device = 0;
  NativeStream stream = nullptr;
  std::span<const polychip_tensor> tensors;  // a b c y, validated by the HAL
  std::span<const uint64_t> addresses;       // device address of each
  const polychip_op_attrs* attrs = nullptr;
};

class GemmOverride {
 public:
  virtual ~GemmOverride() = default;
  // nullopt: declined (library missing, shape it cannot do): use the kernel.
  virtual std::optional<Status> gemm(GpuDriver& driver, const GemmCall& call) = 0;
};

}  // namespace polychip::gpu
