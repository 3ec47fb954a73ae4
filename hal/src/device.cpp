#include "polychip/device.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip {

bool DeviceProperties::supports(DType d) const {
  return std::find(supported_dtypes.begin(), supported_dtypes.end(), d) != supported_dtypes.end();
}

Device::Device(Runtime* runtime, const polychip_adapter_api* api, int adapter_index, int index,
               DeviceProperties properties)
    : runtime_(runtime),
      api_(api),
      adapter_index_(adapter_index),
      index_(index),
      properties_(std::move(properties)) {}

std::string Device::label() const {
  return api_ ? fmt::format("{}:{}", api_->name, index_) : std::string("(no device)");
}

void Device::check(polychip_status status, const char* call) const {
  if (status == POLYCHIP_OK) return;
  check_adapter_status(status, api_->name, call, api_->last_error_message());
}

}  // namespace polychip
