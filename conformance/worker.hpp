// The certify worker: runs one adapter's cases in a child process and
// streams one JSON line per event to a file descriptor, flushed at once, so
// a crash loses at most the case that was running. Protocol:
//   {"event":"hello","adapter":{...},"cases":N}     once, after the device is found
//   {"event":"begin","index":i,"id":"..."}          before case i
//   {"event":"case","index":i,"record":{...}}       after case i
//   {"event":"fatal","usage":bool,"message":"..."}  nothing more will come
//   {"event":"done"}                                every case ran
#pragma once

#include <string>
#include <vector>

#include "case_spec.hpp"
#include "certify_options.hpp"

namespace polychip::conformance {

// The cases of a run: the level's list, the single case of `case_id`, or
// the level's cases of `ops` (not empty: names of the op contract, in any
// order; the cases keep the level's order). Throws Error(INVALID_ARGUMENT)
// for a bad level, case id or op name, and for both a case and ops.
std::vector<precision::CaseSpec> select_cases(const std::string& suite, const std::string& level,
                                              const std::optional<std::string>& case_id,
                                              const std::vector<std::string>& ops = {});

// The reproducer prefix of a case on `adapter`: append the case id.
std::string repro_prefix(const std::string& adapter);

// How a reproducer names polychip: the path of the running executable
// (/proc/self/exe) as one shell word, so that the line runs as printed from
// any folder, with or without polychip on PATH.
std::string polychip_command();

// The environment a reproducer needs to see the same adapters and patches
// (POLYCHIP_ADAPTER_PATH, POLYCHIP_ADAPTERS, POLYCHIP_PATCHES, ... as set
// now), as shell assignments ending in a space; "" when none is set.
std::string repro_environment();

// Returns the process exit code (0 after "done", 1 after "fatal").
int run_worker(const WorkerOptions& options);

}  // namespace polychip::conformance
