// The device-type id rule (docs/adapter-guide.md, "Device-type ids"):
// waivers, patches, hooks and tolerances are keyed by the id, so an adapter
// reporting one that breaks the rule is refused.
#pragma once

#include <string>
#include <string_view>

namespace polychip {

inline constexpr std::string_view kDeviceTypeIdRule =
    "lower-case 'vendor.model', each part only [a-z0-9_-], at most 63 characters";

// Empty when `id` follows the rule, otherwise what breaks it.
std::string device_type_id_problem(std::string_view id);

}  // namespace polychip
