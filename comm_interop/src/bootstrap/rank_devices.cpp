#include "polychip/comm/rank_devices.hpp"

#include "polychip/error.hpp"
#include "polychip/list_item.hpp"

namespace polychip::comm {

std::vector<std::string> rank_device_list(const std::string& list, const std::string& option) {
  if (list.empty()) throw Error(StatusCode::kInvalidArgument, option + " is empty");
  std::vector<std::string> entries;
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    std::string entry = trim_blanks(std::string_view(list).substr(start, comma - start));
    if (entry.empty()) throw Error(StatusCode::kInvalidArgument, option + ": an empty entry");
    entries.push_back(entry);
    if (comma == std::string::npos) return entries;
    start = comma + 1;
  }
}

}  // namespace polychip::comm
