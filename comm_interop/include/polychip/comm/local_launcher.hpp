// The built-in local launcher: runs N processes on this machine with
// torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and
// a fresh POLYCHIP_COMM_SECRET, and waits for all. As soon as one rank fails
// (non-zero exit or a signal) the others get `grace_seconds` to end on their
// own; those still running are then killed and one line on stderr names the
// failed rank and how it ended. Returns 0 when every rank succeeded, else the
// first failed rank's exit code (128 + N when signal N ended it).
// SIGINT, SIGTERM and SIGHUP sent to the launcher (unless it ignores them)
// are passed to every rank (a second one, or `grace_seconds` without their
// end, kills them); once they are gone the signal is raised again in this
// process with its previous disposition, which ends it where that is the
// default. A launcher killed outright takes its ranks with it
// (PR_SET_PDEATHSIG).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace polychip::comm {

// The most ranks it starts: one host's worth (each rank is a process with a
// socket to every other); larger jobs belong to mpirun or a batch system.
inline constexpr int kMaxLocalRanks = 1024;

struct LocalLaunch {
  std::vector<std::string> argv;                 // argv[0] is the program name
  std::string program = "/proc/self/exe";        // what to execute
  int np = 2;                                    // 1 to kMaxLocalRanks
  std::map<std::string, std::string> extra_env;  // for every rank
  // Per-rank extra variables ("" values are skipped).
  std::vector<std::map<std::string, std::string>> rank_env;
  double grace_seconds = 1;
};

// Throws INVALID_ARGUMENT naming --np unless 1 <= np <= kMaxLocalRanks: for
// the commands that take --np, before they do anything else.
void check_local_rank_count(int np);

int launch_local(const LocalLaunch& launch);
// This process's argv from /proc/self/cmdline.
std::vector<std::string> own_command_line();

}  // namespace polychip::comm
