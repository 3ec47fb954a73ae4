#include "profiles.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "polychip/error.hpp"
#include "polychip/whole_file.hpp"

namespace polychip::conformance {

extern const char* const kBuiltinProfilesJson;

namespace {

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

nlohmann::json read_profiles(const std::string& path) {
  std::string text = kBuiltinProfilesJson;
  if (!path.empty()) {
    try {
      text = read_whole_file(path, "profiles file");
    } catch (const Error& e) {  // a usage error, whatever the file's trouble
      throw Error(StatusCode::kInvalidArgument, e.message());
    }
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("profiles file '{}': {}", path.empty() ? "built-in" : path, e.what()));
  }
}

struct Support {
  int ran = 0, refused = 0;  // cases run (any other verdict) and NotSupported
};

// Per "op dtype": how many of its cases ran and how many were refused.
std::map<std::pair<std::string, std::string>, Support> support_of(
    const std::vector<nlohmann::json>& records) {
  std::map<std::pair<std::string, std::string>, Support> pairs;
  for (const auto& r : records) {
    const bool refused = r.value("verdict", "") == "NotSupported";
    if (refused && r.contains("unsupported_dtype")) continue;
    Support& s = pairs[{r.value("op", ""), r.value("dtype", "")}];
    ++(refused ? s.refused : s.ran);
  }
  return pairs;
}

}  // namespace

bool CertificationProfile::requires_pair(const std::string& op, const std::string& dtype) const {
  for (const auto& r : required)
    if ((contains(r.ops, "*") || contains(r.ops, op)) && contains(r.dtypes, dtype)) return true;
  return false;
}

CertificationProfile load_profile(const std::string& name, const std::string& path) {
  const nlohmann::json doc = read_profiles(path);
  try {
    const std::string chosen = name.empty() ? doc.at("default").get<std::string>() : name;
    const auto& profiles = doc.at("profiles");
    if (!profiles.contains(chosen)) {
      std::string known;
      for (const auto& [k, v] : profiles.items()) known += (known.empty() ? "" : ", ") + k;
      throw_error(StatusCode::kInvalidArgument,
                  fmt::format("unknown profile '{}' (profiles: {})", chosen, known));
    }
    const auto& p = profiles.at(chosen);
    CertificationProfile profile{
        chosen, p.value("description", ""), {}, p.at("certifies").get<bool>()};
    for (const auto& r : p.at("required")) {
      const auto& ops = r.at("ops");
      profile.required.push_back({ops.is_string() ? std::vector<std::string>{ops.get<std::string>()}
                                                  : ops.get<std::vector<std::string>>(),
                                  r.at("dtypes").get<std::vector<std::string>>()});
    }
    return profile;
  } catch (const nlohmann::json::exception& e) {
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("profiles file '{}': {}", path.empty() ? "built-in" : path, e.what()));
  }
}

nlohmann::json partial_support(const CertificationProfile& profile,
                               const std::vector<nlohmann::json>& records) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [pair, s] : support_of(records))
    if (s.ran > 0 && s.refused > 0)
      out.push_back({{"op", pair.first},
                     {"dtype", pair.second},
                     {"cases", s.ran + s.refused},
                     {"not_supported", s.refused},
                     {"required", profile.requires_pair(pair.first, pair.second)}});
  return out;
}

std::vector<std::string> enforce_profile(const CertificationProfile& profile,
                                         std::vector<nlohmann::json>& records) {
  const auto support = support_of(records);
  std::set<std::string> missing;
  for (auto& r : records) {
    if (r.value("verdict", "") != "NotSupported") continue;
    const std::string op = r.value("op", ""), dtype = r.value("dtype", "");
    if (!profile.requires_pair(op, dtype)) continue;
    r["verdict"] = "Fail";
    r["required_by"] = profile.name;
    const auto s = support.find({op, dtype});
    const int ran = s == support.end() ? 0 : s->second.ran;
    r["message"] = fmt::format(
        "NotSupported, but profile '{}' requires {} in {}{}: {}", profile.name, op, dtype,
        ran > 0
            ? fmt::format(" (partial support: {} other case{} of it ran)", ran, ran == 1 ? "" : "s")
            : "",
        r.value("message", ""));
    missing.insert(op + " " + dtype);
  }
  return {missing.begin(), missing.end()};
}

}  // namespace polychip::conformance
