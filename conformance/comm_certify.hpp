// `polychip certify --suite comm`: the cross-vendor collective interop suite
// (comm_interop's run_comm_suite, one rank per --adapters entry) turned into
// the same results.json / junit.xml / summary table as the precision suite.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "certify_options.hpp"
#include "polychip/comm/conformance_suite.hpp"

namespace polychip::conformance {

// The largest message per level: quick 64 KiB, standard 4 MiB, full 64 MiB.
uint64_t comm_max_bytes(const std::string& level);

// results.json for a comm run (schema polychip.results/1): one "adapter"
// entry naming the mix of device types, one case per record.
nlohmann::json build_comm_results(const CertifyOptions& options,
                                  const std::vector<comm::CommCaseRecord>& records,
                                  double duration_seconds);

// Runs the suite and writes the results; exit code as `polychip certify`.
int run_comm_certify(const CertifyOptions& options);

}  // namespace polychip::conformance
