// The checks of the event ABI calls that need nothing of the backend:
// which devices the events and streams of a call may belong to, and that
// a timed event was recorded.
#pragma once

#include <cstdint>

namespace polychip::opencl_family {

// event_record: INVALID_ARGUMENT unless the event and the stream belong to
// the same device.
void check_record_devices(int32_t event_device, int32_t stream_device);

// event_elapsed: INVALID_ARGUMENT unless 'start' and 'end' belong to the
// same device.
void check_elapsed_devices(int32_t start_device, int32_t end_device);

// An event read for its time (named `name`): FAILED_PRECONDITION unless it
// was recorded.
void require_recorded(bool recorded, const char* name);

}  // namespace polychip::opencl_family
