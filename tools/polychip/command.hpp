// Subcommands of the `polychip` tool register themselves: each cmd_*.cpp in
// this folder defines a static registration, so adding a command never
// touches main.cpp.
//
//   static const bool registered = polychip::cli::register_command(
//       "info", "List adapters, devices, patches and hooks",
//       [](CLI::App& sub) {
//         auto json = std::make_shared<bool>(false);
//         sub.add_flag("--json", *json, "machine-readable output");
//         return [json] { return run_info(*json); };  // exit code
//       });
//
// Exit codes: 0 success, 1 a check failed, 2 usage error (CLI11 parse errors
// are mapped to 2 by main), 3 an internal error (an uncaught polychip::Error or other exception).
#pragma once

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <system_error>

#include <CLI/CLI.hpp>

#include "polychip/list_item.hpp"

namespace polychip::cli {

// Text options whose empty value would silently mean "the default".
inline CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& text) -> std::string { return text.empty() ? "is empty" : ""; }, "",
      "non-empty");
}

// List items typed with blanks after the commas ("cpu, sim:0"): the blanks
// are not part of the name.
inline CLI::Validator trimmed() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        text = polychip::trim_blanks(text);
        return "";
      },
      "", "trimmed");
}

// A decimal whole number that T holds, for 64-bit options: CLI11 2.1 reads
// them with strtoll/strtoull unchecked, so "99999999999999999999" became
// INT64_MAX and "-1" a seed of 2^64 - 1.
template <typename T>
CLI::Validator whole_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        T value{};
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc() && stop == end) return "";
        return "'" + text + "' is not a whole number in [" +
               std::to_string(std::numeric_limits<T>::min()) + ", " +
               std::to_string(std::numeric_limits<T>::max()) + "]";
      },
      "", "whole number");
}

// A finite number above 0 (CLI::PositiveNumber's refusal printed its range:
// "not in range 0.000000 to 1797693134862315708145...000").
inline CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc() && stop == end && value > 0 && std::isfinite(value)) return "";
        return "'" + text + "' is not a positive number";
      },
      "", "positive number");
}

using CommandRun = std::function<int()>;
using CommandSetup = std::function<CommandRun(CLI::App& subcommand)>;

bool register_command(const char* name, const char* description, CommandSetup setup);

}  // namespace polychip::cli
