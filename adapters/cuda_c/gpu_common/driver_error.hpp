// Driver error codes of CUDA (CUresult) and HIP (hipError_t): their names
// and the polychip status each maps to. The two APIs share their numeric
// codes, so one table serves both adapters.
#pragma once

#include <string>

#include "polychip/adapter_abi.h"

namespace polychip::gpu {

enum class Api { kCuda, kHip };

// "CUDA_ERROR_NO_DEVICE" / "hipErrorNoDevice"; "unknown error <code>" when
// the code is not in the table.
std::string driver_error_name(Api api, int code);

// OUT_OF_MEMORY, UNAVAILABLE (no device/driver), INVALID_ARGUMENT (bad value
// or handle), NOT_FOUND (symbol), UNSUPPORTED, DATA_CORRUPTION (ECC),
// ABORTED (the context is dead after a fault), otherwise INTERNAL.
polychip_status driver_error_status(int code);

// "cuMemAlloc returned CUDA_ERROR_OUT_OF_MEMORY (2)".
std::string describe_driver_call(Api api, const char* call, int code);

// The codes the adapters test for by value.
inline constexpr int kDriverSuccess = 0;
inline constexpr int kDriverNotReady = 600;

}  // namespace polychip::gpu
