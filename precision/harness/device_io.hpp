// Moving host tensors to a device and back, in contiguous or strided
// layouts. Every byte outside a tensor's elements (gaps of strided views, the
// leading offset) holds a canary (0xFF: NaN for floats, -1 for integers), so
// a kernel that reads a gap yields NaN and one that writes outside its
// output is caught.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "polychip/memory.hpp"
#include "polychip/tensor.hpp"
#include "precision/host_tensor.hpp"

namespace polychip::precision {

class DeviceTensor {
 public:
  // Allocates on `device`; uploads `host.values` when `upload` is true,
  // otherwise leaves every byte set to the canary. Strided: the last
  // dimension's stride is 2, rows keep the gap, and element [0,..,0] sits
  // one element after the start of the buffer.
  DeviceTensor(const Device& device, const HostTensor& host, bool strided, bool upload);

  TensorView view() const;
  // Reads the elements back as doubles.
  HostTensor download() const;
  // "" when every byte outside the elements still holds the canary, else a
  // message naming the first modified byte.
  std::string check_canary() const;

 private:
  std::vector<uint64_t> element_offsets() const;  // in bytes, row-major order
  Device device_;
  DType dtype_;
  Shape shape_, strides_;
  uint64_t byte_offset_ = 0;
  uint64_t size_bytes_ = 0;
  Buffer buffer_;
};

}  // namespace polychip::precision
