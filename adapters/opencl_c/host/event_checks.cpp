#include "host/event_checks.hpp"

#include <fmt/format.h>

#include "host/failure.hpp"

namespace polychip::opencl_family {

void check_record_devices(int32_t event_device, int32_t stream_device) {
  if (event_device != stream_device)
    fail(POLYCHIP_INVALID_ARGUMENT, "event and stream belong to different devices");
}

void check_elapsed_devices(int32_t start_device, int32_t end_device) {
  if (start_device != end_device)
    fail(POLYCHIP_INVALID_ARGUMENT, "'start' and 'end' belong to different devices");
}

void require_recorded(bool recorded, const char* name) {
  if (!recorded)
    fail(POLYCHIP_FAILED_PRECONDITION, fmt::format("event '{}' was never recorded", name));
}

}  // namespace polychip::opencl_family
