// The one error idiom of the C++ API: every failure throws polychip::Error,
// carrying the C ABI status code and a message that names what failed.
// Layers on the way up annotate the message with their context (like IREE's
// status annotations) by catching, calling annotate() and rethrowing.
#pragma once

#include <stdexcept>
#include <string>

#include "polychip/adapter_abi.h"

namespace polychip {

enum class StatusCode : int32_t {
  kOk = POLYCHIP_OK,
  kInvalidArgument = POLYCHIP_INVALID_ARGUMENT,
  kNotFound = POLYCHIP_NOT_FOUND,
  kUnsupported = POLYCHIP_UNSUPPORTED,
  kOutOfMemory = POLYCHIP_OUT_OF_MEMORY,
  kUnavailable = POLYCHIP_UNAVAILABLE,
  kFailedPrecondition = POLYCHIP_FAILED_PRECONDITION,
  kIncompatibleVersion = POLYCHIP_INCOMPATIBLE_VERSION,
  kDeadlineExceeded = POLYCHIP_DEADLINE_EXCEEDED,
  kAborted = POLYCHIP_ABORTED,
  kDataCorruption = POLYCHIP_DATA_CORRUPTION,
  kInternal = POLYCHIP_INTERNAL,
};

// "INVALID_ARGUMENT", ...; "UNKNOWN(<n>)" for codes outside the enum.
std::string status_code_name(int32_t code);

// The StatusCode of a failed call's status; a code outside the enum is the
// callee's bug, kept visible as kInternal.
StatusCode failure_code(polychip_status status);

class Error : public std::runtime_error {
 public:
  Error(StatusCode code, std::string message);
  StatusCode code() const noexcept { return code_; }
  // The message without the "CODE: " prefix.
  const std::string& message() const noexcept { return message_; }
  // Returns a copy whose message is "context: message".
  Error annotate(const std::string& context) const;

 private:
  StatusCode code_;
  std::string message_;
};

[[noreturn]] void throw_error(StatusCode code, std::string message);

// Turns an adapter call's status into an Error naming the adapter and call.
// `adapter_message` is the adapter's last_error_message() (may be null).
void check_adapter_status(polychip_status status, const char* adapter, const char* call,
                          const char* adapter_message);

}  // namespace polychip
