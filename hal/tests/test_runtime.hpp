// A private runtime with just the built-in cpu adapter, for HAL tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "polychip/hal.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);

namespace polychip::testing {

inline RuntimeOptions cpu_only_options() {
  RuntimeOptions o;
  o.builtin_adapters = {&polychip_cpu_adapter_get_api};
  return o;
}

// `make` must throw an Error with `code` whose message contains `part`.
void expect_error(StatusCode code, const std::string& part, auto make) {
  try {
    make();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(e.message().find(part), std::string::npos) << e.message();
  }
}

}  // namespace polychip::testing
