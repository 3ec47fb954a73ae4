// Umbrella header of the polychip C++ API.
#pragma once

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
