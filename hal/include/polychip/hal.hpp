// Umbrella header of the polychip C++ API.
#pragma once

// The API uses std::span, concepts and ranges: without this check a C++17
// build fails deep inside the headers.
#if __cplusplus < 202002L
#error "polychip's C++ API needs C++20: compile with -std=c++20 (or newer)"
#endif

#include "polychip/adapter_abi.h"
#include "polychip/device.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/dtype.hpp"
#include "polychip/error.hpp"
#include "polychip/memory.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/patch_abi.h"
#include "polychip/runtime.hpp"
#include "polychip/tensor.hpp"
