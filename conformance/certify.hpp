// `polychip certify`: runs the suite on each requested adapter (in worker
// processes), writes DIR/results.json and DIR/junit.xml atomically, prints
// the summary table. Exit code: 0 every adapter passes, 1 one fails, 2 usage
// error.
#pragma once

#include "certify_options.hpp"

namespace polychip::conformance {

int run_certify(const CertifyOptions& options);

}  // namespace polychip::conformance
