#include <map>
#include <string>

#include "command.hpp"
#include "command_registry.hpp"

namespace polychip::cli {

std::vector<RegisteredCommand>& registered_commands() {
  static std::vector<RegisteredCommand> commands;
  return commands;
}

bool register_command(const char* name, const char* description, CommandSetup setup) {
  registered_commands().push_back({name, description, std::move(setup)});
  return true;
}

}  // namespace polychip::cli
