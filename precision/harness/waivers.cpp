#include "waivers.hpp"

#include <fmt/format.h>

#include "json_data_file.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::precision {

extern const char* const kBuiltinWaiversJson;

namespace {

[[noreturn]] void bad(const std::string& origin, const std::string& why) {
  throw_bad_data_file("waivers", origin, why);
}

bool matches(const std::string& pattern, const std::string& value) {
  return pattern == "*" || pattern == value;
}

// "" matches every case; "x/*" every id starting with "x/"; else exact.
bool case_matches(const std::string& pattern, const std::string& id) {
  if (pattern.empty()) return true;
  if (pattern.back() == '*')
    return id.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
  return pattern == id;
}

// Case ids begin "<op>/": a pattern for another op's cases never matches.
bool case_can_be_of_op(const std::string& pattern, const std::string& op) {
  if (pattern.empty() || op == "*") return true;
  const std::string prefix = op + "/";
  if (pattern.back() != '*') return pattern.starts_with(prefix);
  const std::string_view stem = std::string_view(pattern).substr(0, pattern.size() - 1);
  return stem.starts_with(prefix) || prefix.starts_with(stem);
}

}  // namespace

WaiverList WaiverList::from_json(const nlohmann::json& doc, std::string origin) {
  if (!has_schema(doc, "polychip.waivers/1"))
    bad(origin, "must be an object with \"schema\": \"polychip.waivers/1\"");
  refuse_unknown_keys("waivers", origin, doc, "the document", {"schema", "about", "waivers"});
  if (!doc.contains("waivers") || !doc["waivers"].is_array())
    bad(origin, "'waivers' must be an array");
  WaiverList list;
  list.origin_ = std::move(origin);
  size_t k = 0;
  for (const auto& e : doc["waivers"]) {
    std::string where = fmt::format("waivers[{}]", k++);
    if (!e.is_object()) bad(list.origin_, where + " must be an object");
    // A misspelt optional key ("cse") would widen the waiver to every case.
    refuse_unknown_keys("waivers", list.origin_, e, where,
                        {"adapter", "op", "dtype", "kind", "reason", "reference", "case"});
    Waiver w;
    struct Field {
      const char* key;
      std::string* value;
      bool required;  // and then non-empty; an optional one may be absent or empty
    };
    for (auto [key, value, required] :
         {Field{"adapter", &w.adapter, true}, Field{"op", &w.op, true},
          Field{"dtype", &w.dtype, true}, Field{"kind", &w.kind, true},
          Field{"reason", &w.reason, true}, Field{"reference", &w.reference, false},
          Field{"case", &w.case_pattern, false}}) {
      if (!required && !e.contains(key)) continue;
      if (!e.contains(key) || !e[key].is_string() ||
          (required && e[key].get_ref<const std::string&>().empty()))
        bad(list.origin_,
            fmt::format("{}.{} must be a {}string", where, key, required ? "non-empty " : ""));
      *value = e[key].get<std::string>();
    }
    if (w.kind != "waiver" && w.kind != "expected_failure")
      bad(list.origin_,
          fmt::format("{}.kind '{}' must be \"waiver\" or \"expected_failure\"", where, w.kind));
    if (w.op != "*" && !find_op(w.op))
      bad(list.origin_, fmt::format("{}.op '{}' is not an op of the contract", where, w.op));
    if (w.dtype != "*") {
      try {
        parse_dtype(w.dtype);
      } catch (const Error& err) {
        bad(list.origin_, fmt::format("{}.dtype: {}", where, err.message()));
      }
    }
    if (!case_can_be_of_op(w.case_pattern, w.op))
      bad(list.origin_, fmt::format("{}.case '{}' names no case of op '{}' (its ids begin '{}/')",
                                    where, w.case_pattern, w.op, w.op));
    list.waivers_.push_back(std::move(w));
  }
  return list;
}

WaiverList WaiverList::from_file(const std::string& path) {
  return from_json(read_json_data_file("waivers", path), path);
}

const WaiverList& WaiverList::builtin() {
  static const WaiverList list =
      from_json(nlohmann::json::parse(kBuiltinWaiversJson), "built-in waivers.json");
  return list;
}

std::optional<Waiver> WaiverList::match(const std::string& adapter, const std::string& device_type,
                                        const std::string& op, DType dtype,
                                        const std::string& case_id) const {
  const std::string dt(dtype_name(dtype));
  for (const auto& w : waivers_)
    if ((matches(w.adapter, adapter) || matches(w.adapter, device_type)) && matches(w.op, op) &&
        matches(w.dtype, dt) && case_matches(w.case_pattern, case_id))
      return w;
  return std::nullopt;
}

std::vector<Waiver> WaiverList::for_adapter(const std::string& adapter,
                                            const std::string& device_type) const {
  std::vector<Waiver> out;
  for (const auto& w : waivers_)
    if (matches(w.adapter, adapter) || matches(w.adapter, device_type)) out.push_back(w);
  return out;
}

bool waives_every_case_of(const Waiver& w, const std::string& op, const std::string& dtype) {
  if (!matches(w.op, op) || !matches(w.dtype, dtype)) return false;
  const std::string& pattern = w.case_pattern;
  if (pattern.empty()) return true;
  if (pattern.back() != '*') return false;
  return (op + "/" + dtype + "/")
      .starts_with(std::string_view(pattern).substr(0, pattern.size() - 1));
}

nlohmann::json to_json(const Waiver& w) {
  nlohmann::json j = {{"adapter", w.adapter},
                      {"op", w.op},
                      {"dtype", w.dtype},
                      {"kind", w.kind},
                      {"reason", w.reason}};
  if (!w.reference.empty()) j["reference"] = w.reference;
  if (!w.case_pattern.empty()) j["case"] = w.case_pattern;
  return j;
}

}  // namespace polychip::precision
