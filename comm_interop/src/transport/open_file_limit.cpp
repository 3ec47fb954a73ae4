#include "transport/open_file_limit.hpp"

#include <sys/resource.h>

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip::comm {
namespace {

// What a rank holds besides its peers' connections: the listener, the
// store's client, pipes, an adapter's device files, the libraries' own.
constexpr uint64_t kFilesBesidesPeers = 64;

std::string limit_text(rlim_t limit) {
  return limit == RLIM_INFINITY ? "unlimited" : std::to_string(limit);
}

}  // namespace

uint64_t open_files_needed(int world, int sockets_per_peer, bool serves_store) {
  const uint64_t peers = world > 1 ? static_cast<uint64_t>(world - 1) : 0;
  // + 1 a peer: a shared-memory, RDMA or GDR lane's descriptor.
  return kFilesBesidesPeers + peers * (static_cast<uint64_t>(sockets_per_peer) + 1) +
         (serves_store ? peers : 0);
}

void ensure_open_file_limit(uint64_t needed, const std::string& what_needs_it) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;  // nothing known: let EMFILE say it
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= needed) return;
  const std::string shortfall =
      fmt::format("{} needs about {} open files in this process; it may hold {} (ulimit -n)",
                  what_needs_it, needed, limit_text(limit.rlim_cur));
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed) {
    throw_error(StatusCode::kUnavailable,
                fmt::format("{} and at most {} (ulimit -Hn): raise the hard limit or run fewer "
                            "ranks",
                            shortfall, limit_text(limit.rlim_max)));
  }
  limit.rlim_cur = needed;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
    throw_error(StatusCode::kUnavailable, shortfall + " and raising it failed");
}

std::string open_file_limit_text() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return "(ulimit -n)";
  return "(this process may hold " + limit_text(limit.rlim_cur) + " open files: ulimit -n)";
}

}  // namespace polychip::comm
