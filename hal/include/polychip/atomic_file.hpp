// Atomic file replacement: write a temporary file in the same folder, fsync
// it, rename it over the target, fsync the folder. A reader (or a run killed
// at any moment) sees the old file or the new one, never half of one.
#pragma once

#include <string>
#include <string_view>

namespace polychip {

// Throws Error(UNAVAILABLE) naming the path and the failing call.
void write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace polychip
