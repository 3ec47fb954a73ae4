#include "transport/byte_ring.hpp"

#include <algorithm>
#include <cstring>

namespace polychip::comm {

uint64_t ByteRing::read(void* data, uint64_t size) {
  auto* dst = static_cast<uint8_t*>(data);
  uint64_t done = 0;
  while (done < size) {
    const uint8_t* src;
    const uint64_t n = std::min(size - done, peek(&src));
    if (n == 0) break;
    std::memcpy(dst + done, src, n);
    consume(n);
    done += n;
  }
  return done;
}

}  // namespace polychip::comm
