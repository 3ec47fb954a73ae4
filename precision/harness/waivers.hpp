// Per-vendor waivers, kept in a data file (conformance/data/waivers.json)
// instead of skip decorators scattered over tests, so every report can list
// them. Two kinds, kept apart as in the IREE HAL CTS:
//  - "waiver": permanent (the hardware cannot do better; accepted);
//  - "expected_failure": a known bug to be fixed; listed as such.
// A failing case matched by either gets the verdict Waived, with the entry.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "polychip/dtype.hpp"

namespace polychip::precision {

struct Waiver {
  std::string adapter;  // adapter name or device type ("sim.bf16acc"); "*" = any
  std::string op;       // op name; "*" = any
  std::string dtype;    // dtype name; "*" = any
  std::string kind;     // "waiver" or "expected_failure"
  std::string reason;
  std::string reference;  // issue / ticket, may be empty
  // Optional: narrows the waiver to one case id, or to ids starting with
  // the text before a trailing '*' ("gelu/f32/999/special/*").
  std::string case_pattern;
};

class WaiverList {
 public:
  // Throws Error(INVALID_ARGUMENT) naming the bad entry.
  static WaiverList from_json(const nlohmann::json& doc, std::string origin);
  static WaiverList from_file(const std::string& path);
  // The list shipped with polychip (conformance/data/waivers.json, compiled in).
  static const WaiverList& builtin();

  // The first waiver matching a case of (adapter name, device type, op, dtype).
  std::optional<Waiver> match(const std::string& adapter, const std::string& device_type,
                              const std::string& op, DType dtype,
                              const std::string& case_id = "") const;
  // Waivers that can apply to an adapter or device type (for reports).
  std::vector<Waiver> for_adapter(const std::string& adapter, const std::string& device_type) const;
  const std::vector<Waiver>& all() const { return waivers_; }
  const std::string& origin() const { return origin_; }

 private:
  std::vector<Waiver> waivers_;
  std::string origin_;
};

// Whether `w` waives every case of `op` in `dtype`, whatever the case
// gives: no `case`, or a prefix that every id "<op>/<dtype>/..." starts
// with ("exp/*"). Which adapters it applies to is not considered.
bool waives_every_case_of(const Waiver& w, const std::string& op, const std::string& dtype);

nlohmann::json to_json(const Waiver& w);

}  // namespace polychip::precision
