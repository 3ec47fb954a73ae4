// The error idiom inside the OpenCL-family adapters: code throws a Failure
// (a status and a message); the C entry points turn it into a status and a
// last error message (error_channel.hpp), so it never crosses the C ABI.
#pragma once

#include <string>
#include <utility>

#include "polychip/adapter_abi.h"

namespace polychip::opencl_family {

struct Failure {
  polychip_status status;
  std::string message;
};

[[noreturn]] inline void fail(polychip_status status, std::string message) {
  throw Failure{status, std::move(message)};
}

}  // namespace polychip::opencl_family
