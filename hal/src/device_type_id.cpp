#include "device_type_id.hpp"

#include <fmt/format.h>

#include "polychip/adapter_abi.h"

namespace polychip {
namespace {

bool allowed(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

}  // namespace

std::string device_type_id_problem(std::string_view id) {
  if (id.size() > POLYCHIP_DEVICE_TYPE_MAX - 1)
    return fmt::format("device type '{}' has {} characters, more than {}", id, id.size(),
                       POLYCHIP_DEVICE_TYPE_MAX - 1);
  const size_t dot = id.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == id.size() ||
      id.find('.', dot + 1) != std::string_view::npos)
    return fmt::format("device type '{}' is not 'vendor.model' (one '.' between two parts)", id);
  for (char c : id)
    if (c != '.' && !allowed(c))
      return fmt::format("device type '{}' has '{}', outside [a-z0-9_-]{}", id, c,
                         c >= 'A' && c <= 'Z' ? " (ids are lower case)" : "");
  return "";
}

}  // namespace polychip
