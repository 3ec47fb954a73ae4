// Lists the devices through an installed libpolychip and checks that the
// collectives' C API links; exits non-zero when no device is found.
#include <polychip/comm/comm.h>
#include <polychip/hal.hpp>

#include <cstdio>

int main() {
  const auto devices = polychip::Runtime::global().devices();
  for (const auto& device : devices)
    std::printf("%s %s\n", device.label().c_str(), device.device_type().c_str());
  std::printf("comm: '%s'\n", polychip_comm_last_error());
  return devices.empty() ? 1 : 0;
}
