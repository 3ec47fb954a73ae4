#include "polychip/comm/island_ccl.hpp"

#include <mutex>
#include <utility>

namespace polychip::comm {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::pair<std::string, IslandCclFactory>> factories;
};
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

bool register_island_ccl(const std::string& prefix, IslandCclFactory factory) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto& [p, f] : r.factories) {
    if (p == prefix) return false;
  }
  r.factories.emplace_back(prefix, std::move(factory));
  return true;
}

std::unique_ptr<IslandCollectives> make_island_ccl(const IslandContext& context) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto& [prefix, factory] : r.factories) {
    if (context.device_type.rfind(prefix, 0) == 0) return factory(context);
  }
  return nullptr;
}

}  // namespace polychip::comm
