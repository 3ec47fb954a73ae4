// How errors leave an OpenCL-family adapter: its C entry points run their
// body through an ErrorChannel, which returns a status and keeps
// "<adapter> <call>: <message>" for last_error_message(). Each adapter has
// one channel per thread, so messages do not leak between threads.
#pragma once

#include <string>

#include "polychip/adapter_abi.h"

namespace polychip::opencl_family {

class ErrorChannel {
 public:
  explicit ErrorChannel(const char* adapter) : adapter_(adapter) {}

  // ABI calls: a Failure keeps its status, std::bad_alloc is OUT_OF_MEMORY,
  // any other std::exception INTERNAL.
  template <typename F>
  polychip_status guarded(const char* call, F&& body) {
    return run(call, Entry::kAbiCall, body);
  }

  // Kernel entry points (`op` names the call): a Failure keeps its status,
  // any other std::exception is INTERNAL, std::bad_alloc included (as these
  // entry points have always reported it).
  template <typename F>
  polychip_status guarded_kernel(const char* op, F&& body) {
    return run(op, Entry::kKernel, body);
  }

  const char* last_message() const { return last_message_.c_str(); }

 private:
  enum class Entry { kAbiCall, kKernel };

  template <typename F>
  polychip_status run(const char* call, Entry entry, F& body) {
    try {
      body();
      return POLYCHIP_OK;
    } catch (...) {
      return report_current_exception(call, entry);
    }
  }

  // Called inside a catch block: rethrows, records the message and
  // returns the status; exceptions of other types propagate.
  polychip_status report_current_exception(const char* call, Entry entry);

  const char* adapter_;
  std::string last_message_;
};

}  // namespace polychip::opencl_family
