// What `polychip certify --adapters` names, resolved before anything runs:
// an adapter name means every device of that adapter (each certified and
// reported on its own), a device type or `adapter:N` means that one device.
// Every entry is checked up front so a typo is a usage error at once, never
// a worker (or a comm rank group) waiting out its timeout.
#pragma once

#include <string>
#include <vector>

#include "polychip/runtime.hpp"

namespace polychip::conformance {

// Returns one spec per device to certify (as given, or `adapter:N` for each
// device of an adapter with several). Throws polychip::Error (kNotFound / kInvalidArgument) naming
// the entry; an adapter without devices is reported with the adapter's own reason.
// `expand_adapters` false: each entry is exactly one device (comm ranks).
std::vector<std::string> resolve_targets(const Runtime& runtime,
                                         const std::vector<std::string>& requested,
                                         bool expand_adapters);

}  // namespace polychip::conformance
