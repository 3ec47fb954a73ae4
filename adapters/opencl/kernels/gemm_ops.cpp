// GEMM launcher: the tiled kernel by default, the naive one on request.
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "ops.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::opencl {

namespace {

// Whether two row-major tensors share bytes of the same memory.
bool overlaps(const polychip_tensor& x, const polychip_tensor& y) {
  if (!x.memory || x.memory != y.memory) return false;
  uint64_t xe = x.byte_offset + static_cast<uint64_t>(numel(x)) * element_size(x.dtype);
  uint64_t ye = y.byte_offset + static_cast<uint64_t>(numel(y)) * element_size(y.dtype);
  return x.byte_offset < ye && y.byte_offset < xe;
}

}  // namespace

GemmKernel gemm_kernel_from_environment() {
  const char* v = std::getenv("POLYCHIP_OPENCL_GEMM");
  if (!v || !*v || std::strcmp(v, "tiled") == 0) return GemmKernel::kTiled;
  if (std::strcmp(v, "naive") == 0) return GemmKernel::kNaive;
  // A misspelt "naiv" must not silently time the tiled kernel.
  opencl_family::fail(POLYCHIP_INVALID_ARGUMENT,
                      fmt::format("POLYCHIP_OPENCL_GEMM='{}': expected tiled or naive", v));
}

void run_gemm(const KernelCall& call) {
  const auto &a = call.t(0), &y = call.t(3);
  const int o = a.rank - 2;
  const bool ta = call.i(attr::kTransA) != 0, tb = call.i(attr::kTransB) != 0;
  const int64_t batch = o ? a.shape[0] : 1;
  const int64_t m = y.shape[o], n = y.shape[o + 1];
  const int64_t k = ta ? a.shape[o] : a.shape[o + 1];
  const double alpha = call.f(attr::kAlpha), beta = call.f(attr::kBeta);
  const GemmKernel variant = gemm_kernel_from_environment();
  const bool naive = variant == GemmKernel::kNaive;

  if (batch == 0 || m == 0 || n == 0) return;
  // y may be a or b (the contract allows an exact alias): then other
  // work-groups would read outputs already written, so compute into scratch.
  const bool y_aliases_input = overlaps(call.t(3), call.t(0)) || overlaps(call.t(3), call.t(1));
  const size_t y_bytes = static_cast<size_t>(numel(y)) * element_size(y.dtype);
  std::optional<Scratch> y_scratch;
  if (y_aliases_input) y_scratch.emplace(call.device, y_bytes);
  cl_mem y_mem = y_aliases_input ? y_scratch->mem() : tensor_mem(call, 3);
  int64_t y_off = y_aliases_input ? 0 : element_offset(call, 3);
  {
    Launch launch(call.device, "gemm", a.dtype, naive ? "pc_gemm_naive" : "pc_gemm_tiled");
    launch.arg(m).arg(n).arg(k).arg(static_cast<int32_t>(ta)).arg(static_cast<int32_t>(tb));
    launch.arg(AccScalar(a.dtype, alpha)).arg(AccScalar(a.dtype, beta));
    // c is not read when beta == 0: pass y's buffer so c may be absent.
    cl_mem c_mem = beta != 0 ? tensor_mem(call, 2) : tensor_mem(call, 3);
    int64_t c_off = beta != 0 ? element_offset(call, 2) : element_offset(call, 3);
    launch.buffer(tensor_mem(call, 0))
        .arg(element_offset(call, 0))
        .buffer(tensor_mem(call, 1))
        .arg(element_offset(call, 1))
        .buffer(c_mem)
        .arg(c_off)
        .buffer(y_mem)
        .arg(y_off);
    if (naive) {
      size_t global[3] = {static_cast<size_t>(n), static_cast<size_t>(m),
                          static_cast<size_t>(batch)};
      launch.run(call.queue, 3, global);
    } else {
      constexpr size_t kTile = 64, kGroup = 8;
      size_t global[3] = {(static_cast<size_t>(n) + kTile - 1) / kTile * kGroup,
                          (static_cast<size_t>(m) + kTile - 1) / kTile * kGroup,
                          static_cast<size_t>(batch)};
      size_t local[3] = {kGroup, kGroup, 1};
      launch.run(call.queue, 3, global, local);
    }
  }
  if (y_aliases_input)
    check_cl(cl().clEnqueueCopyBuffer(call.queue, y_mem, tensor_mem(call, 3), 0, y.byte_offset,
                                      y_bytes, 0, nullptr, nullptr),
             "clEnqueueCopyBuffer (gemm output)");
}

}  // namespace polychip::opencl
