// The C++ API alone, through an installed libpolychip: lists the devices;
// exits non-zero when there is none. docs/adapter-guide.md's pkg-config
// block builds it as app.cpp (check_pkg_config_doc.cmake).
#include <polychip/hal.hpp>

#include <cstdio>

int main() {
  const auto devices = polychip::Runtime::global().devices();
  for (const auto& device : devices)
    std::printf("%s %s\n", device.label().c_str(), device.device_type().c_str());
  return devices.empty() ? 1 : 0;
}
