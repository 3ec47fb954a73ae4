// The `polychip` command line: subcommands register themselves (command.hpp).
#include <algorithm>
#include <cstdio>
#include <map>

#include "command_registry.hpp"
#include "polychip/error.hpp"

int main(int argc, char** argv) {
  using namespace polychip::cli;
  CLI::App app{"polychip: hardware adaptation layer and conformance suite for AI chips"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "polychip 0.1.0");
  auto& commands = registered_commands();
  std::sort(commands.begin(), commands.end(),
            [](const auto& a, const auto& b) { return std::string(a.name) < b.name; });
  std::map<CLI::App*, CommandRun> runs;
  for (auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.description);
    runs[sub] = c.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (auto& [sub, run] : runs)
      if (sub->parsed()) return run();
  } catch (const polychip::Error& e) {
    std::fprintf(stderr, "polychip: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {  // a defect of ours, but never an abort()
    std::fprintf(stderr, "polychip: internal error: %s\n", e.what());
    return 3;
  }
  return 2;
}
