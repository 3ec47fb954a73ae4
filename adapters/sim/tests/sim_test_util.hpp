// A runtime with the cpu and sim adapters, and runners for each device.
#pragma once

#include "kernel_test_util.hpp"
#include "sim_adapter.hpp"

namespace polychip::testing {

class SimTest : public ::testing::Test {
 protected:
  Runtime rt{kernel_test_options({&polychip_sim_adapter_get_api})};
  OpRunner cpu{rt.device("cpu:0")};
  OpRunner runner(const char* device_type) { return OpRunner(rt.device(device_type)); }
};

}  // namespace polychip::testing
