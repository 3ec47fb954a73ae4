// The one reader of the HAL's boolean environment variables, so every one
// accepts the same spellings and rejects the rest loudly.
#pragma once

#include <optional>
#include <string_view>

namespace polychip {

// 1/0, true/false, yes/no, on/off (any case); nullopt for anything else.
std::optional<bool> parse_boolean(std::string_view text);

// Unset or empty: `unset_value`. Throws INVALID_ARGUMENT naming the variable,
// its value and the accepted spellings for anything parse_boolean rejects.
bool read_boolean_environment(const char* name, bool unset_value);

}  // namespace polychip
