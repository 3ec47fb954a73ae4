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
// are mapped to 2 by main), 3 an internal error (uncaught polychip::Error).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace polychip::cli {

using CommandRun = std::function<int()>;
using CommandSetup = std::function<CommandRun(CLI::App& subcommand)>;

bool register_command(const char* name, const char* description, CommandSetup setup);

}  // namespace polychip::cli
