// The "hip" adapter: AMD GPUs through the HIP module API (dlopen'ed) and the
// shared CUDA-C kernels compiled by hipcc for gfx90a. gemm uses the shared
// tiled kernel: Debian 12 packages no hipBLAS/rocBLAS (libhipblas-dev and
// librocblas-dev have no candidate).
#include "hip_adapter.hpp"

#include "gpu_common/adapter_table.hpp"
#include "hip_driver.hpp"

namespace polychip::hip {

gpu::GpuAdapter& adapter() {
  // Never destroyed: the runtime may already be gone at process exit.
  static gpu::GpuAdapter* instance = new gpu::GpuAdapter(
      gpu::GpuAdapterConfig{"hip", "amd", "HIP", gpu::polychip_hip_kernel_image(),
                            "built without HIP kernels (POLYCHIP_BUILD_HIP=OFF)"},
      make_hip_driver());
  return *instance;
}

}  // namespace polychip::hip

extern "C" const polychip_adapter_api* polychip_hip_adapter_get_api(void) {
  return polychip::gpu::AdapterTable<&polychip::hip::adapter>::table("hip", "AMD", "0.1.0");
}
