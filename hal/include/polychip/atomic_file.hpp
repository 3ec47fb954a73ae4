// Atomic file replacement: write a temporary file in the same folder, fsync
// it, rename it over the target, fsync the folder. A reader (or a run killed
// at any moment) sees the old file or the new one, never half of one.
#pragma once

#include <string>
#include <string_view>

namespace polychip {

// Throws Error(UNAVAILABLE) naming the path and the failing call.
void write_file_atomically(const std::string& path, std::string_view contents);

// The two halves of write_file_atomically, for files that are replaced
// together (write every one's temporary first, then move them all): a
// temporary file beside `path` (hidden, in its folder, so on its file system)
// holding `contents`, synced; its name. Nothing is left behind when it throws.
std::string write_temporary_beside(const std::string& path, std::string_view contents);
// Renames `temporary` over `path` and syncs the folder; a temporary that
// cannot be renamed is removed.
void move_into_place(const std::string& temporary, const std::string& path);

// For a command that writes `path` at the end of its run, checked before the
// run: throws INVALID_ARGUMENT "OPTION 'PATH': no folder 'F'" where no folder
// holds it, "OPTION 'PATH' is a folder: name FILE_ROLE" where it is one.
void check_file_destination(const std::string& option, const std::string& path,
                            const std::string& file_role);

}  // namespace polychip
