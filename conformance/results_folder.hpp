// The --out folder of a certify run, from its first case until its results
// are written. Nothing in it may pass for this run's result before then: an
// earlier run's results.json and junit.xml are set aside as
// results.json.previous and junit.xml.previous when the run starts (a CI job
// that reads the folder after a run was killed, or could not write its
// results, finds no results file, not an earlier Pass), and are dropped
// once this run's pair is written. The pair is written together: both files
// or neither. SIGINT and SIGTERM during the run say on stderr that it was
// interrupted and what the folder holds.
#pragma once

#include <string>

namespace polychip::conformance {

inline constexpr const char* kResultsFileName = "results.json";
inline constexpr const char* kJunitFileName = "junit.xml";
inline constexpr const char* kPreviousSuffix = ".previous";

class RunInProgress {
 public:
  // Creates `dir` and sets an earlier run's results aside (a folder named
  // like a results file is left where it is). Until destroyed, SIGINT and
  // SIGTERM print that the run was interrupted and what `dir` holds, stop
  // the certify worker that is running (stop_running_worker) and end the
  // process as the signal does (exit status 128 + the signal). Throws
  // Error(INVALID_ARGUMENT) naming `dir`.
  explicit RunInProgress(const std::string& dir);
  ~RunInProgress();
  RunInProgress(const RunInProgress&) = delete;
  RunInProgress& operator=(const RunInProgress&) = delete;
};

// What `dir` holds of an earlier run, for a message: "the earlier run's
// results are set aside in DIR: results.json.previous, junit.xml.previous",
// or "" when it holds none.
std::string earlier_results_note(const std::string& dir);

// Writes DIR/results.json and DIR/junit.xml together: both temporary files
// are written before either is moved into place, and when either cannot be
// written or moved, neither file of this run is left in `dir`. Then drops
// the earlier run's *.previous. Throws Error naming the file and the call
// that failed.
void write_results_pair(const std::string& dir, const std::string& results_json,
                        const std::string& junit_xml);

}  // namespace polychip::conformance
