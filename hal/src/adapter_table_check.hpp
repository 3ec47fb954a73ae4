// Version negotiation and sanity checks for adapter and patch tables.
#pragma once

#include <string>

#include "polychip/adapter_abi.h"
#include "polychip/patch_abi.h"

namespace polychip {

// "" when the HAL can use the table; otherwise why not, naming the table's
// version and the HAL's (e.g. "ABI version 2.0 is incompatible with this
// HAL's ABI 1.0: major versions differ").
// The HAL's own version is a parameter so tests can negotiate against
// other HAL versions.
std::string check_adapter_table(const polychip_adapter_api* api,
                                int hal_major = POLYCHIP_ABI_VERSION_MAJOR,
                                int hal_minor = POLYCHIP_ABI_VERSION_MINOR);
std::string check_patch_table(const polychip_patch_api* api,
                              int hal_major = POLYCHIP_ABI_VERSION_MAJOR,
                              int hal_minor = POLYCHIP_ABI_VERSION_MINOR);

}  // namespace polychip
