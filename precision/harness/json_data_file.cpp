#include "json_data_file.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "polychip/error.hpp"
#include "polychip/whole_file.hpp"

namespace polychip::precision {

void throw_bad_data_file(std::string_view kind, const std::string& origin, const std::string& why) {
  throw_error(StatusCode::kInvalidArgument, fmt::format("{} '{}': {}", kind, origin, why));
}

nlohmann::json read_json_data_file(std::string_view kind, const std::string& path) {
  const std::string text = read_whole_file(path, fmt::format("{} file", kind));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw_bad_data_file(kind, path, e.what());
  }
}

bool has_schema(const nlohmann::json& doc, std::string_view schema) {
  if (!doc.is_object()) return false;
  auto it = doc.find("schema");
  return it != doc.end() && it->is_string() && it->get_ref<const std::string&>() == schema;
}

void refuse_unknown_keys(std::string_view kind, const std::string& origin,
                         const nlohmann::json& obj, const std::string& where,
                         std::initializer_list<std::string_view> known) {
  for (auto& [key, value] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string names;
    for (std::string_view k : known) names += fmt::format("{}{}", names.empty() ? "" : ", ", k);
    throw_bad_data_file(kind, origin,
                        fmt::format("'{}': unknown key '{}' (known: {})", where, key, names));
  }
}

}  // namespace polychip::precision
