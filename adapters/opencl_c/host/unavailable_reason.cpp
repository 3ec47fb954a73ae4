#include "host/unavailable_reason.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace polychip::opencl_family {

std::string no_device_reason(std::string_view backend, std::string_view none_found,
                             const std::vector<std::string>& problems) {
  if (problems.empty()) return std::string(none_found);
  return fmt::format("no usable {} device: {}", backend, fmt::join(problems, "; "));
}

}  // namespace polychip::opencl_family
