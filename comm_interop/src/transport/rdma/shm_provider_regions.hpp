// What libfabric's shm provider leaves behind when a process is killed.
// The provider keeps each endpoint's region in /dev/shm, named
// "<pid>:<uid>:<endpoint index>" (libfabric 1.17), and removes it on exit
// and on catchable signals only: each rank killed by SIGKILL while it had an
// endpoint on `shm` leaves 16 MiB in /dev/shm (a tmpfs: memory) until
// someone removes it. The local launcher removes a killed rank's regions.
#pragma once

#include <sys/types.h>

#include <string>

namespace polychip::comm {

// Removes the shm provider's regions of process `pid` under `directory`
// (the names of this user's endpoints of that process only); returns how
// many. `pid` must be dead and not yet reaped (a zombie): until it is
// reaped no other process can take the pid and create such names.
int remove_shm_provider_regions(pid_t pid, const std::string& directory = "/dev/shm");

}  // namespace polychip::comm
