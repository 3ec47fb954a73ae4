// The job-wide view of a hang. A rank whose operation times out asks every
// peer where it waits (status frames, wire.hpp) and classifies the answers:
//   signature-mismatch  a rank waits in the same collective number with another call;
//   missing-enter       ranks never entered this call (named: they wait in an earlier
//                       collective, in send/recv, or answer nothing — not in any call);
//   missing-exit        every rank entered, some already left it (their frames never came);
//   all-stuck           every rank waits in this very call: none is missing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wire/wire.hpp"

namespace polychip::comm {

struct WaitState {
  bool answered = false;  // peers only: a status frame came back
  WaitingIn in = WaitingIn::kCollective;
  uint64_t seq = 0;    // the collective's sequence number (collectives only)
  CallSignature call;  // collectives only
};

struct HangView {
  std::string hang_class;
  std::string text;  // appended to the timeout's error message
  std::string json;  // one line: {"polychip_comm_hang": {...}}
};

// `states[rank]` for every rank; `states[me]` is the rank that timed out.
HangView classify_hang(int me, const std::vector<WaitState>& states, double asked_seconds);

}  // namespace polychip::comm
