// Atomic file replacement: write a temporary file in the same folder, fsync
// it, rename it over the target, fsync the folder. A reader (or a run killed
// at any moment) sees the old file or the new one, never half of one.
#pragma once

#include <string>
#include <string_view>

namespace polychip {

// Throws Error(UNAVAILABLE) naming the path and the failing call.
void write_file_atomically(const std::string& path, std::string_view contents);

// For a command that writes `path` at the end of its run, checked before the
// run: throws INVALID_ARGUMENT "OPTION 'PATH': no folder 'F'" where no folder
// holds it, "OPTION 'PATH' is a folder: name FILE_ROLE" where it is one.
void check_file_destination(const std::string& option, const std::string& path,
                            const std::string& file_role);

}  // namespace polychip
