#include "references.hpp"

#include <string>

#include "precision/oracle/oracle.hpp"
#if POLYCHIP_HAVE_NVIDIA_REFERENCE
#include "reference/nvidia_reference.hpp"
#endif

namespace polychip::conformance {

precision::References default_references() {
  precision::References r;
  r.oracle = precision::kOracle;
#if POLYCHIP_HAVE_NVIDIA_REFERENCE
  r.nvidia = reference::kNvidiaReference;
  r.nvidia_label = std::string(reference::kEmulatedProvenance);
#endif
  return r;
}

}  // namespace polychip::conformance
