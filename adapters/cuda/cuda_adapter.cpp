// The "cuda" adapter: NVIDIA GPUs through the CUDA driver API (dlopen'ed),
// the shared CUDA-C kernels (embedded fatbin for sm_80/sm_90 + PTX) and
// cuBLAS for gemm.
#include "cuda_adapter.hpp"

#include "cublas_gemm.hpp"
#include "cuda_driver.hpp"
#include "gpu_common/adapter_table.hpp"

namespace polychip::cuda {

gpu::GpuAdapter& adapter() {
  // Never destroyed: the driver may already be gone at process exit.
  static gpu::GpuAdapter* instance = new gpu::GpuAdapter(
      gpu::GpuAdapterConfig{"cuda", "nvidia", "CUDA", gpu::polychip_cuda_kernel_image(),
                            "built without CUDA kernels (POLYCHIP_BUILD_CUDA=OFF)"},
      make_cuda_driver(), make_cublas_gemm());
  return *instance;
}

}  // namespace polychip::cuda

extern "C" const polychip_adapter_api* polychip_cuda_adapter_get_api(void) {
  return polychip::gpu::AdapterTable<&polychip::cuda::adapter>::table("cuda", "NVIDIA", "0.1.0");
}
