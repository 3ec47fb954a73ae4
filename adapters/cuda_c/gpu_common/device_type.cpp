#include "device_type.hpp"

#include "polychip/adapter_abi.h"

namespace polychip::gpu {

namespace {

std::string sanitize(std::string_view text) {
  std::string out;
  bool pending_dash = false;
  for (char raw : text) {
    char c = (raw >= 'A' && raw <= 'Z') ? static_cast<char>(raw - 'A' + 'a') : raw;
    bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!keep) {
      pending_dash = !out.empty();
      continue;
    }
    if (pending_dash) out.push_back('-');
    pending_dash = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string device_type_id(std::string_view vendor, std::string_view device_name) {
  const std::string v = sanitize(vendor);
  std::string model = sanitize(device_name);
  // "NVIDIA H100" already names the vendor: keep "h100".
  if (model == v) model.clear();
  if (model.size() > v.size() && model.compare(0, v.size(), v) == 0 && model[v.size()] == '-')
    model.erase(0, v.size() + 1);
  if (model.empty()) model = "unknown";
  std::string id = v + "." + model;
  const size_t max = POLYCHIP_DEVICE_TYPE_MAX - 1;
  if (id.size() > max) {
    id.resize(max);
    while (!id.empty() && id.back() == '-') id.pop_back();
  }
  return id;
}

}  // namespace polychip::gpu
