// Packs kernel arguments the way cuLaunchKernel / hipModuleLaunchKernel want
// them: an array of pointers, one per parameter, each pointing at a copy of
// the value with the value's natural alignment.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace polychip::gpu {

class KernelParams {
 public:
  // Argument bytes are capped so a pack never reallocates (pointers stay
  // valid); 4 KiB is the CUDA limit on kernel parameters.
  static constexpr size_t kCapacity = 4096;

  KernelParams() = default;
  // pointers() point into this object: it never moves.
  KernelParams(const KernelParams&) = delete;
  KernelParams& operator=(const KernelParams&) = delete;

  // Appends the arguments in order.
  template <typename... T>
  KernelParams& add(const T&... values) {
    static_assert((std::is_trivially_copyable_v<T> && ...), "kernel arguments are copied bytewise");
    (append(&values, sizeof(T), alignof(T)), ...);
    return *this;
  }

  // Pointers to each argument, in order (the kernelParams array).
  void** pointers() { return pointers_.data(); }
  size_t count() const { return pointers_.size(); }
  // sizeof of each argument, in order (checked against kernel signatures).
  const std::vector<size_t>& sizes() const { return sizes_; }
  size_t bytes_used() const { return used_; }
  // False once an add() did not fit (the pack must not be launched).
  bool ok() const { return ok_; }

 private:
  void append(const void* value, size_t size, size_t alignment);

  alignas(16) std::array<unsigned char, kCapacity> storage_{};
  size_t used_ = 0;
  bool ok_ = true;
  std::vector<void*> pointers_;
  std::vector<size_t> sizes_;
};

}  // namespace polychip::gpu
