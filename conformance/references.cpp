#include "references.hpp"

#include "precision/oracle/oracle.hpp"

namespace polychip::conformance {

precision::References default_references() {
  precision::References r;
  r.oracle = precision::kOracle;
  r.nvidia = nullptr;
  return r;
}

}  // namespace polychip::conformance
