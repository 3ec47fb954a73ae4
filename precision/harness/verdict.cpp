#include "verdict.hpp"

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip::precision {

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "Pass";
    case Verdict::kQualityWarning:
      return "QualityWarning";
    case Verdict::kMistrusted:
      return "Mistrusted";
    case Verdict::kNotSupported:
      return "NotSupported";
    case Verdict::kWaived:
      return "Waived";
    case Verdict::kFail:
      return "Fail";
    case Verdict::kCrash:
      return "Crash";
    case Verdict::kTimeout:
      return "Timeout";
  }
  return "?";
}

Verdict parse_verdict(std::string_view name) {
  for (Verdict v : kAllVerdicts)
    if (verdict_name(v) == name) return v;
  throw_error(StatusCode::kInvalidArgument, fmt::format("unknown verdict '{}'", name));
}

bool is_failure(Verdict v) {
  return v == Verdict::kFail || v == Verdict::kCrash || v == Verdict::kTimeout;
}

}  // namespace polychip::precision
