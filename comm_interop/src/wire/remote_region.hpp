// A registered memory region as a peer needs it to write there (address,
// key, size), and its 24-byte wire form: the RDMA lane offers and the GDR
// call offers both carry regions.
#pragma once

#include <cstdint>

#include "wire/byte_io.hpp"

namespace polychip::comm {

struct RemoteRegion {
  uint64_t address = 0;  // what fi_write takes: a virtual address or an offset
  uint64_t key = 0;
  uint64_t size = 0;
};

inline constexpr size_t kRemoteRegionBytes = 3 * 8;

inline void write_region(ByteWriter& w, const RemoteRegion& r) {
  w.u64(r.address);
  w.u64(r.key);
  w.u64(r.size);
}

inline RemoteRegion read_region(ByteReader& r, const char* what) {
  RemoteRegion region;
  region.address = r.u64(what);
  region.key = r.u64(what);
  region.size = r.u64(what);
  return region;
}

}  // namespace polychip::comm
