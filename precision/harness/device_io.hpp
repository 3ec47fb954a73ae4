// Moving host tensors to a device and back, in contiguous or strided
// layouts. Every tensor sits between two guard bands of kGuardBytes, and
// every byte outside its elements (guard bands, gaps of strided views, the
// leading offset) holds a canary (0xFF: NaN for floats, -1 for integers), so
// a kernel that reads outside its elements yields NaN and one that writes
// outside its output is caught, with the offset named.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "polychip/memory.hpp"
#include "polychip/tensor.hpp"
#include "precision/host_tensor.hpp"

namespace polychip::precision {

// Bytes of canary before and after every tensor: a write a few elements
// past either end (a vector tail, an off-by-one) lands in them.
inline constexpr uint64_t kGuardBytes = 256;

class DeviceTensor {
 public:
  // Allocates on `device`; uploads `host.values` when `upload` is true,
  // otherwise leaves every byte set to the canary. Strided: the last
  // dimension's stride is 2, rows keep the gap, and element [0,..,0] sits
  // one element after the guard band.
  // Broadcast: dimension 0 has stride 0 (every row is the same memory; the
  // host values' rows must be equal); only one row is allocated.
  DeviceTensor(const Device& device, const HostTensor& host, bool strided, bool upload,
               bool broadcast = false);

  // A view of the whole allocation: the dispatcher checks it against the
  // buffer's size, and memory_size() is that size, guard bands included.
  TensorView view() const;
  // Reads the elements back as doubles.
  HostTensor download() const;
  // "" when every byte outside the elements still holds the canary, else a
  // message naming the first modified byte by its distance from the
  // elements ("4 byte(s) past its last element (element offset +2)").
  std::string check_canary() const;

 private:
  std::vector<uint64_t> element_offsets() const;  // in bytes, row-major order
  DType dtype_;
  Shape shape_, strides_;
  uint64_t byte_offset_ = 0;  // of element [0, ..., 0]
  uint64_t end_offset_ = 0;   // one byte past the last element
  uint64_t size_bytes_ = 0;
  Buffer buffer_;
};

}  // namespace polychip::precision
