// A private runtime with just the built-in cpu adapter, for HAL tests.
#pragma once

#include "polychip/hal.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);

namespace polychip::testing {

inline RuntimeOptions cpu_only_options() {
  RuntimeOptions o;
  o.builtin_adapters = {&polychip_cpu_adapter_get_api};
  return o;
}

}  // namespace polychip::testing
