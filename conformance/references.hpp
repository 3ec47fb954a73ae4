// The reference implementations the precision suite compares against: the
// float64 oracle and, when built, the NVIDIA emulation (reference/).
#pragma once

#include "case_runner.hpp"

namespace polychip::conformance {

precision::References default_references();

}  // namespace polychip::conformance
