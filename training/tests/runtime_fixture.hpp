// A private runtime with the cpu adapter, a stream and the ops on it, shared
// by the training tests.
#pragma once

#include "hal_ops.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/runtime.hpp"

namespace polychip::training {

struct CpuRuntime {
  static RuntimeOptions options() {
    RuntimeOptions o;
    o.builtin_adapters = builtin_adapter_entries();
    o.selected_adapters = std::vector<std::string>{"cpu"};
    return o;
  }
  Runtime runtime{options()};
  Device device = runtime.device("cpu");
  Stream stream{device};
  HalOps ops{runtime.dispatcher(), stream};
};

}  // namespace polychip::training
