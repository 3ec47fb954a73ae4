#include "environment_flag.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip {

std::optional<bool> parse_boolean(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* yes : {"1", "true", "yes", "on"})
    if (lower == yes) return true;
  for (const char* no : {"0", "false", "no", "off"})
    if (lower == no) return false;
  return std::nullopt;
}

bool read_boolean_environment(const char* name, bool unset_value) {
  const char* value = std::getenv(name);
  if (!value || !*value) return unset_value;
  if (auto parsed = parse_boolean(value)) return *parsed;
  throw_error(
      StatusCode::kInvalidArgument,
      fmt::format("{}='{}' is not a boolean: use 1/0, true/false, yes/no or on/off", name, value));
}

}  // namespace polychip
