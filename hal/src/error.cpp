#include "polychip/error.hpp"

#include <fmt/format.h>

namespace polychip {

std::string status_code_name(int32_t code) {
  static const char* const kNames[] = {"OK",
                                       "INVALID_ARGUMENT",
                                       "NOT_FOUND",
                                       "UNSUPPORTED",
                                       "OUT_OF_MEMORY",
                                       "UNAVAILABLE",
                                       "FAILED_PRECONDITION",
                                       "INCOMPATIBLE_VERSION",
                                       "DEADLINE_EXCEEDED",
                                       "ABORTED",
                                       "DATA_CORRUPTION",
                                       "INTERNAL"};
  if (code >= 0 && code < POLYCHIP_STATUS_COUNT_) return kNames[code];
  return fmt::format("UNKNOWN({})", code);
}

Error::Error(StatusCode code, std::string message)
    : std::runtime_error(status_code_name(static_cast<int32_t>(code)) + ": " + message),
      code_(code),
      message_(std::move(message)) {}

Error Error::annotate(const std::string& context) const {
  return Error(code_, context + ": " + message_);
}

void throw_error(StatusCode code, std::string message) { throw Error(code, std::move(message)); }

StatusCode failure_code(polychip_status status) {
  return status > 0 && status < POLYCHIP_STATUS_COUNT_ ? static_cast<StatusCode>(status)
                                                       : StatusCode::kInternal;
}

void check_adapter_status(polychip_status status, const char* adapter, const char* call,
                          const char* adapter_message) {
  if (status == POLYCHIP_OK) return;
  const StatusCode code = failure_code(status);
  std::string detail = adapter_message && *adapter_message ? adapter_message : "(no message)";
  throw_error(code, fmt::format("adapter '{}' {} failed with {}: {}", adapter, call,
                                status_code_name(status), detail));
}

}  // namespace polychip
