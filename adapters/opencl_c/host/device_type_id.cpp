#include "host/device_type_id.hpp"

#include <cctype>

namespace polychip::opencl_family {

std::string sanitize_id_part(std::string_view text) {
  std::string out;
  bool dash = false;
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '.' || c == '_') {
      if (dash && !out.empty()) out += '-';
      dash = false;
      out += static_cast<char>(std::tolower(c));
    } else {
      dash = true;
    }
  }
  return out;
}

std::string join_device_type_id(std::string_view vendor, std::string_view model,
                                size_t max_length) {
  std::string id = std::string(vendor) + "." + std::string(model);
  if (id.size() > max_length) id.resize(max_length);
  while (!id.empty() && id.back() == '-') id.pop_back();
  return id;
}

}  // namespace polychip::opencl_family
