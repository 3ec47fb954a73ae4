// Reading the harness's JSON data files (tolerances, waivers): one way to
// report a file that cannot be read or a bad entry, naming the kind of file.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace polychip::precision {

// Throws INVALID_ARGUMENT "<kind> '<origin>': <why>" (`origin`: a path or
// "built-in <file>").
[[noreturn]] void throw_bad_data_file(std::string_view kind, const std::string& origin,
                                      const std::string& why);

// The JSON in `path`: NOT_FOUND "<kind> file '<path>' cannot be read" when it
// cannot be opened, INVALID_ARGUMENT (as throw_bad_data_file) when it is not JSON.
nlohmann::json read_json_data_file(std::string_view kind, const std::string& path);

// Whether `doc` is an object whose "schema" is the string `schema`; false for
// any other document, a missing schema or one that is not a string.
bool has_schema(const nlohmann::json& doc, std::string_view schema);

// Refuses (as throw_bad_data_file) a key of the object `obj` that is not one
// of `known`, naming `where` and the known keys: a misspelt key would
// otherwise leave what it meant to set at its default, unseen.
void refuse_unknown_keys(std::string_view kind, const std::string& origin,
                         const nlohmann::json& obj, const std::string& where,
                         std::initializer_list<std::string_view> known);

}  // namespace polychip::precision
