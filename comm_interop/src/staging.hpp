// Host staging of device buffers: host pointers and host-visible device
// memory (the cpu adapter's) are used in place; other device memory (sim,
// opencl, ...) is copied device -> host before the network and host ->
// device after it, with the adapter's own copies.
#pragma once

#include <cstdint>
#include <vector>

#include "polychip/comm/buffer_ref.hpp"

namespace polychip::comm {

class Staging {
 public:
  struct Lease {
    std::vector<uint8_t> storage;
  };
  // Host pointer holding `bytes` of `b`'s current contents.
  uint8_t* input(const BufferRef& b, uint64_t bytes, std::vector<Lease>& leases);
  // Host pointer the result of `bytes` goes to (contents undefined).
  uint8_t* output(const BufferRef& b, uint64_t bytes, std::vector<Lease>& leases);
  // Writes the result back when `b` is staged device memory.
  void copy_back(const BufferRef& b, const uint8_t* host, uint64_t bytes);
  bool host_visible(const BufferRef& b) const;
  bool staged(const BufferRef& b) const { return b.on_device() && !host_visible(b); }

 private:
  uint8_t* mapped(const BufferRef& b, uint64_t bytes) const;
};

}  // namespace polychip::comm
