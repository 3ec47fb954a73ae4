#include "host/error_channel.hpp"

#include <exception>
#include <new>

#include <fmt/format.h>

#include "host/failure.hpp"

namespace polychip::opencl_family {

polychip_status ErrorChannel::report_current_exception(const char* call, Entry entry) {
  try {
    throw;
  } catch (const Failure& f) {
    last_message_ = fmt::format("{} {}: {}", adapter_, call, f.message);
    return f.status;
  } catch (const std::exception& e) {
    if (entry == Entry::kAbiCall && dynamic_cast<const std::bad_alloc*>(&e)) {
      last_message_ = fmt::format("{} {}: out of host memory", adapter_, call);
      return POLYCHIP_OUT_OF_MEMORY;
    }
    last_message_ = fmt::format("{} {}: {}", adapter_, call, e.what());
    return POLYCHIP_INTERNAL;
  }
}

}  // namespace polychip::opencl_family
