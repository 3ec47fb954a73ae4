// Items of lists people type (POLYCHIP_ADAPTERS, --adapters, --devices):
// "cpu, sim:0" names "sim:0", not " sim:0".
#pragma once

#include <string>
#include <string_view>

namespace polychip {

// `text` without the blanks (spaces, tabs) around it.
std::string trim_blanks(std::string_view text);

}  // namespace polychip
