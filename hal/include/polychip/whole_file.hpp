// Reading a data file whole (tolerances, waivers, profiles, reference traces,
// checkpoints), with the errors a user can act on: a std::ifstream opens a
// folder and then throws from deep inside the library on the first read.
#pragma once

#include <string>

namespace polychip {

// The file's bytes. Throws Error, its message starting "WHAT: " (what the
// file is, e.g. "waivers file"): NOT_FOUND "cannot open PATH: <why>" where it
// cannot be opened, INVALID_ARGUMENT "PATH is a folder, not a file",
// UNAVAILABLE "cannot read PATH: <why>".
std::string read_whole_file(const std::string& path, const std::string& what);

}  // namespace polychip
