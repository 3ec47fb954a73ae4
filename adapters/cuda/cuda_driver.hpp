// GpuDriver over the CUDA driver API, loaded with dlopen("libcuda.so.1").
#pragma once

#include <memory>
#include <string>

#include "gpu_common/gpu_driver.hpp"

namespace polychip::cuda {

// `library_names`: where to look for the driver (tests point it at the
// toolkit's stub library to exercise the failure path).
std::unique_ptr<gpu::GpuDriver> make_cuda_driver(
    std::initializer_list<const char*> library_names = {"libcuda.so.1"});

}  // namespace polychip::cuda
