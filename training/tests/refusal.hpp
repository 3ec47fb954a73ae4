// The outcome of a call a test expects to be refused, for the training tests
// that feed many damaged inputs to one reader or check.
#pragma once

#include <string>
#include <utility>

#include "polychip/error.hpp"

namespace polychip::training {

// The message of the Error `call` threw when its code is `expected`;
// "accepted" when it threw nothing; otherwise the code it did throw named
// before the message, so a test matching the text fails saying why.
template <class Call>
std::string refusal_of(StatusCode expected, Call&& call) {
  try {
    std::forward<Call>(call)();
  } catch (const Error& e) {
    if (e.code() == expected) return e.message();
    return "not " + status_code_name(static_cast<int32_t>(expected)) + " but " +
           status_code_name(static_cast<int32_t>(e.code())) + ": " + e.message();
  }
  return "accepted";
}

}  // namespace polychip::training
