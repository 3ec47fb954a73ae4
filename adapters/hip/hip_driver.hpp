// GpuDriver over the HIP module API, loaded with dlopen("libamdhip64.so.5").
#pragma once

#include <initializer_list>
#include <memory>

#include "gpu_common/gpu_driver.hpp"

namespace polychip::hip {

std::unique_ptr<gpu::GpuDriver> make_hip_driver(std::initializer_list<const char*> library_names = {
                                                    "libamdhip64.so.5", "libamdhip64.so"});

}  // namespace polychip::hip
