#include "transport/rdma/shm_provider_regions.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cctype>
#include <memory>

namespace polychip::comm {

namespace {

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

int remove_shm_provider_regions(pid_t pid, const std::string& directory) {
  const std::string prefix = std::to_string(pid) + ":" + std::to_string(::getuid()) + ":";
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(directory.c_str()), ::closedir);
  if (!dir) return 0;
  int removed = 0;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0 || !all_digits(name.substr(prefix.size()))) {
      continue;
    }
    if (::unlink((directory + "/" + name).c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace polychip::comm
