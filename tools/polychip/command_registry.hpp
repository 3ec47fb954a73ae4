// What main.cpp sees of the registered subcommands.
#pragma once

#include <vector>

#include "command.hpp"

namespace polychip::cli {

struct RegisteredCommand {
  const char* name;
  const char* description;
  CommandSetup setup;
};

std::vector<RegisteredCommand>& registered_commands();

}  // namespace polychip::cli
