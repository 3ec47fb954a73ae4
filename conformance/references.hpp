// The reference implementations the precision suite compares against: the
// float64 oracle and, when built, the NVIDIA emulation (reference/), which
// outputs recorded on NVIDIA hardware replace case by case.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "case_runner.hpp"

namespace polychip::reference {
class TraceStore;
}

namespace polychip::conformance {

// `recorded` (may be null): a trace whose records replace the emulation for
// the cases they hold.
precision::References default_references(
    std::shared_ptr<const reference::TraceStore> recorded = nullptr);

// Reads --nvidia-trace's file: Error NOT_FOUND / DATA_CORRUPTION naming it,
// UNSUPPORTED when this build leaves out reference/.
std::shared_ptr<const reference::TraceStore> read_nvidia_trace(const std::string& path);

// What results.json says the NVIDIA reference of a run is: the emulation,
// or the recording's provenance and how many of `cases` it holds.
std::string nvidia_reference_description(const reference::TraceStore* recorded,
                                         const std::vector<precision::CaseSpec>& cases);

}  // namespace polychip::conformance
