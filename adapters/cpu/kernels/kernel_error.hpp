// Errors raised inside kernels (data-dependent ones such as an embedding id
// out of range): a status plus a thread-local message that the adapter's
// last_error_message() returns.
#pragma once

#include <string>

#include "polychip/adapter_abi.h"

namespace polychip::cpu {

// Stores `message` as this thread's last kernel error and returns `status`.
polychip_status kernel_error(polychip_status status, std::string message);
// The message of this thread's last kernel error ("" if none).
const char* last_kernel_error();

}  // namespace polychip::cpu
