// A polychip status with its message, as the shared GPU adapter returns it.
#pragma once

#include <string>

#include "polychip/adapter_abi.h"

namespace polychip::gpu {

struct Status {
  polychip_status code = POLYCHIP_OK;
  std::string message;

  bool ok() const { return code == POLYCHIP_OK; }
  static Status Ok() { return {}; }
};

inline Status make_status(polychip_status code, std::string message) {
  return Status{code, std::move(message)};
}

}  // namespace polychip::gpu
