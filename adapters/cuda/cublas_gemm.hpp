// gemm through cuBLAS (dlopen'ed libcublas), per cublas_plan.hpp. Declines
// (so the shared tiled kernel runs) when libcublas cannot be loaded or a
// size exceeds its 32-bit arguments.
#pragma once

#include <memory>

#include "gpu_common/gemm_override.hpp"

namespace polychip::cuda {

std::unique_ptr<gpu::GemmOverride> make_cublas_gemm();

}  // namespace polychip::cuda
