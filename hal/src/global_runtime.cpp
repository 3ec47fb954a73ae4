// Runtime::global() and the environment: compiled into libpolychip, where the
// built-in adapter list is known.
#include <cstdlib>
#include <string>

#include "environment_flag.hpp"
#include "polychip/list_item.hpp"
#include "polychip/runtime.hpp"

namespace polychip {
namespace {

// Items of a `sep`-separated list, empty ones dropped; with `trim`, blanks
// around an item go too ("cpu, sim" selects "sim", not " sim").
std::vector<std::string> split(const char* value, char sep, bool trim = false) {
  std::vector<std::string> out;
  if (!value) return out;
  std::string cur;
  for (const char* p = value;; ++p) {
    if (*p == sep || *p == '\0') {
      if (trim) cur = trim_blanks(cur);
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  return out;
}

}  // namespace

RuntimeOptions RuntimeOptions::from_environment() {
  RuntimeOptions o;
  o.builtin_adapters = builtin_adapter_entries();
  o.adapter_path = split(std::getenv("POLYCHIP_ADAPTER_PATH"), ':');
  if (const char* sel = std::getenv("POLYCHIP_ADAPTERS"); sel && *sel)
    o.selected_adapters = split(sel, ',', true);
  o.patch_libraries = split(std::getenv("POLYCHIP_PATCHES"), ':');
  o.host_fallback = read_boolean_environment("POLYCHIP_HOST_FALLBACK", false);
  return o;
}

Runtime& Runtime::global() {
  static Runtime runtime(RuntimeOptions::from_environment());
  return runtime;
}

}  // namespace polychip
