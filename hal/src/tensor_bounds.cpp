#include "polychip/tensor_bounds.hpp"

#include "polychip/dtype.hpp"

namespace polychip {

std::string check_tensor_bounds(const polychip_tensor& t, uint64_t memory_size, int index) {
  const std::string name = "tensor " + std::to_string(index);
  if (t.rank < 0 || t.rank > POLYCHIP_MAX_RANK || !is_valid_dtype(t.dtype))
    return name + " has an invalid rank or dtype";
  // Signs first, then emptiness: a negative size is refused wherever a zero
  // stands, and an empty view fits however far its other sizes reach.
  for (int d = 0; d < t.rank; ++d)
    if (t.shape[d] < 0 || t.strides[d] < 0) return name + " has a negative size or stride";
  for (int d = 0; d < t.rank; ++d)
    if (t.shape[d] == 0) return "";
  uint64_t last = 0;  // element index of the furthest element
  for (int d = 0; d < t.rank; ++d) {
    uint64_t span;
    if (__builtin_mul_overflow(static_cast<uint64_t>(t.shape[d] - 1),
                               static_cast<uint64_t>(t.strides[d]), &span) ||
        __builtin_add_overflow(last, span, &last))
      return name + " spans more than 2^64 elements";
  }
  const uint64_t element_bytes = dtype_size(static_cast<DType>(t.dtype));
  uint64_t end;
  if (__builtin_mul_overflow(last + 1, element_bytes, &end) ||
      __builtin_add_overflow(end, t.byte_offset, &end))
    return name + " reaches beyond byte 2^64";
  if (end > memory_size)
    return name + " reaches byte " + std::to_string(end) + " but its memory holds " +
           std::to_string(memory_size) + " bytes";
  return "";
}

std::string check_tensors_bounds(std::span<const polychip_tensor> tensors,
                                 MemorySizeFn memory_size) {
  for (size_t k = 0; k < tensors.size(); ++k) {
    const uint64_t size = tensors[k].memory ? memory_size(tensors[k].memory) : 0;
    if (std::string why = check_tensor_bounds(tensors[k], size, static_cast<int>(k)); !why.empty())
      return why;
  }
  return "";
}

}  // namespace polychip
