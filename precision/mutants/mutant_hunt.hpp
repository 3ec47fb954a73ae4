// Certifies a mutant chip on the cases of its op: per dtype, whether some
// case fails it (the mutant is caught there) or every case passes (it
// survives: a hole in the suite).
#pragma once

#include <string>
#include <vector>

#include "misreadings.hpp"
#include "precision/harness/case_runner.hpp"

namespace polychip::precision {

struct MutantOutcome {
  Mutant mutant;
  std::vector<DType> caught;
  std::vector<DType> survived;
  std::vector<std::string> caught_by;  // per caught dtype, the first case that failed
  bool killed() const { return survived.empty(); }
};

// Runs the cases of `cases` whose op is the mutant's on ctx's device (the
// cpu adapter; the mutant is installed for the duration), dtype by dtype,
// stopping at each dtype's first failing case. A dtype with no case counts
// as survived.
MutantOutcome hunt_mutant(const Mutant& mutant, const std::vector<CaseSpec>& cases,
                          const CaseContext& ctx);

}  // namespace polychip::precision
