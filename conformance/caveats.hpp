// What a precision run's verdict stands on that is not a polychip
// certification: tolerances loosened past the built-in ones, a profile that
// certifies nothing, failures that waivers turned into Waived, waivers that
// waive a required op x dtype wholesale, a run of part of a level. Each is a
// caveat (a sentence of results.json's `caveats`, `certified` false): a Pass
// under it is no certification, and Python's CertifyRun.certified is False.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "certify_options.hpp"
#include "profiles.hpp"
#include "results.hpp"
#include "tolerance.hpp"

namespace polychip::conformance {

// A --tolerances file at `path` that loosens `loosened` (not empty): names
// the first few bounds; run.tolerances_loosened has them all.
std::string loosened_tolerances_caveat(const std::string& path,
                                       const std::vector<precision::ToleranceLoosening>& loosened);

// A run of part of its level (--case, --ops) checked only those cases: its
// verdict is no certification. std::nullopt for a run of the whole level.
std::optional<std::string> partial_run_caveat(const CertifyOptions& options, size_t cases_run);

// `waivers_path`: the --waivers file, "" for the built-in waivers. A
// vendor's own file is not polychip's word: every case it waives is a
// caveat, as is every required pair it waives whatever the result. Of the
// built-in waivers, only expected failures (known bugs) are.
std::vector<std::string> precision_caveats(const CertificationProfile& profile,
                                           const SuiteRun& suite, const std::string& waivers_path);

}  // namespace polychip::conformance
