// Device: a cheap, copyable reference to one device of one adapter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "polychip/adapter_abi.h"
#include "polychip/dtype.hpp"

namespace polychip {

class Runtime;

struct DeviceProperties {
  std::string device_type;  // "vendor.model"
  std::string name;
  uint64_t memory_bytes = 0;
  std::vector<DType> supported_dtypes;
  uint64_t capabilities = 0;  // POLYCHIP_CAP_*
  int compute_units = 0;
  bool supports(DType d) const;
  bool has(uint64_t capability) const { return (capabilities & capability) != 0; }
};

class Device {
 public:
  Device() = default;
  Device(Runtime* runtime, const polychip_adapter_api* api, int adapter_index, int index,
         DeviceProperties properties);

  const polychip_adapter_api& api() const { return *api_; }
  const char* adapter_name() const { return api_->name; }
  int adapter_index() const { return adapter_index_; }
  int index() const { return index_; }
  const DeviceProperties& properties() const { return properties_; }
  const std::string& device_type() const { return properties_.device_type; }
  Runtime& runtime() const { return *runtime_; }
  // "cpu:0"
  std::string label() const;
  bool operator==(const Device& o) const { return api_ == o.api_ && index_ == o.index_; }
  bool valid() const { return api_ != nullptr; }

  // Throws Error built from the adapter's last message when status != OK.
  void check(polychip_status status, const char* call) const;

 private:
  Runtime* runtime_ = nullptr;
  const polychip_adapter_api* api_ = nullptr;
  int adapter_index_ = -1;
  int index_ = -1;
  DeviceProperties properties_;
};

}  // namespace polychip
