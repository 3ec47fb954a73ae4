#include "kernel_params.hpp"

namespace polychip::gpu {

void KernelParams::append(const void* value, size_t size, size_t alignment) {
  size_t offset = (used_ + alignment - 1) / alignment * alignment;
  if (offset + size > kCapacity) {
    ok_ = false;
    return;
  }
  std::memcpy(storage_.data() + offset, value, size);
  pointers_.push_back(storage_.data() + offset);
  sizes_.push_back(size);
  used_ = offset + size;
}

}  // namespace polychip::gpu
