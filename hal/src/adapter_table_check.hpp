// Version negotiation and sanity checks for adapter and patch tables.
#pragma once

#include <string>

#include "polychip/adapter_abi.h"
#include "polychip/patch_abi.h"

namespace polychip {

// "" when the HAL can use the table; otherwise why not, naming the table's
// version and the HAL's (e.g. "ABI version 2.0 is incompatible with this
// HAL's ABI 1.0: major versions differ").
std::string check_adapter_table(const polychip_adapter_api* api);
std::string check_patch_table(const polychip_patch_api* api);

}  // namespace polychip
