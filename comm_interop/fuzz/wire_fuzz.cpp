// libFuzzer target for every wire-message parser. The first input byte picks
// the parser (like the corpus files in tests/corpus); the parsers must either
// accept or throw polychip::Error, never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <span>

#include "polychip/error.hpp"
#include "wire/wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using namespace polychip::comm;
  std::span<const uint8_t> input(data + 1, size - 1);
  try {
    switch (data[0] % 11) {
      case 0:
        parse_frame_header(input, 0);
        break;
      case 1:
        parse_hello(input);
        break;
      case 2:
        parse_challenge(input);
        break;
      case 3:
        parse_response(input);
        break;
      case 4:
        parse_store_request(input);
        break;
      case 5:
        parse_peer_info(input);
        break;
      case 6:
        parse_shm_offer(input);
        break;
      case 7:
        parse_shm_reply(input);
        break;
      case 8:
        parse_rdma_offer(input);
        break;
      case 9:
        parse_rdma_reply(input);
        break;
      case 10:
        parse_placement_offers(input);
        break;
    }
  } catch (const polychip::Error&) {
  }
  return 0;
}
