// The devices of a job's ranks as one option ("cpu,sim.faithful,opencl"):
// rank r takes entry r % size. `polychip comm-perf --devices` and
// `polychip train --adapter` read it alike.
#pragma once

#include <string>
#include <vector>

namespace polychip::comm {

// The entries of `list`; INVALID_ARGUMENT naming `option` for an empty list
// or an empty entry (",," or "cpu,,opencl" would otherwise shift ranks onto
// other devices, or leave none to take).
std::vector<std::string> rank_device_list(const std::string& list, const std::string& option);

}  // namespace polychip::comm
