// A mutant chip: the cpu adapter with one op's kernel patched
// (Dispatcher::patch) to misread its contract one way (misreadings.hpp).
// The patched kernel changes what the faithful cpu kernel reads (an
// attribute at its default, strides, flushed or narrowed inputs, restored
// after the call so the inputs come back unchanged) or what it wrote
// (outputs at a lower precision, flushed, NaN dropped, a tail zeroed).
#pragma once

#include <cstdint>
#include <string_view>

#include "misreadings.hpp"
#include "polychip/dispatcher.hpp"

namespace polychip::precision {

// Installs `mutant` on `device_type` (a device of the cpu adapter: the
// patched kernel reads its memory as host memory) until destruction. One mutant chip at a time per
// process (the patched kernel is a plain function and reads the active mutant from a global); a
// second one throws FAILED_PRECONDITION.
class MutantChip {
 public:
  MutantChip(Dispatcher& dispatcher, std::string_view device_type, const Mutant& mutant);
  ~MutantChip();
  MutantChip(const MutantChip&) = delete;
  MutantChip& operator=(const MutantChip&) = delete;

 private:
  Dispatcher& dispatcher_;
  uint64_t patch_id_ = 0;
};

}  // namespace polychip::precision
