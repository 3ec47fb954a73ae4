// How many files a rank may hold open: each holds sockets_per_peer TCP
// connections (and a lane) per peer, rank 0 the rendezvous store's clients
// too, so a job of a few hundred ranks outgrows the usual soft limit of 1024.
#pragma once

#include <cstdint>
#include <string>

namespace polychip::comm {

// The open files a rank of a `world`-rank job needs at the most, with
// `sockets_per_peer` connections to each peer; `serves_store`: rank 0,
// which accepts every rank's store connection as well.
uint64_t open_files_needed(int world, int sockets_per_peer, bool serves_store);

// Raises this process's soft limit on open files to `needed` where it is
// lower and the hard limit allows (as a job would die with EMFILE half-way
// through set-up otherwise); throws UNAVAILABLE naming both numbers and
// `what_needs_it` where the hard limit is lower.
void ensure_open_file_limit(uint64_t needed, const std::string& what_needs_it);

// "(this process may hold N open files: ulimit -n)", for an EMFILE error.
std::string open_file_limit_text();

}  // namespace polychip::comm
