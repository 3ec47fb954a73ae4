// The sim adapter: simulated chips, one device per numerics profile
// (sim_profiles.hpp), device memory the host cannot touch except through
// the API (sim_memory.hpp), asynchronous streams (sim_stream.hpp), and the
// cpu kernels run with each profile's numerics.
#pragma once

#include "polychip/adapter_abi.h"

extern "C" const polychip_adapter_api* polychip_sim_adapter_get_api(void);
