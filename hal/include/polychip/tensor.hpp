// Tensor (owns a Buffer) and TensorView (borrows memory): dtype, shape,
// strides in elements, device. Views convert to the ABI's polychip_tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "polychip/memory.hpp"

namespace polychip {

using Shape = std::vector<int64_t>;

Shape row_major_strides(const Shape& shape);
int64_t element_count(const Shape& shape);

class TensorView {
 public:
  TensorView() = default;
  // A view of a raw adapter handle: its size is unknown, so only the
  // adapter can check that the view stays inside it.
  TensorView(Device device, polychip_memory* memory, DType dtype, Shape shape, Shape strides,
             uint64_t byte_offset = 0);
  // A view of `buffer`, which the dispatcher checks against the buffer's size.
  TensorView(const Buffer& buffer, DType dtype, Shape shape, Shape strides,
             uint64_t byte_offset = 0);

  const Device& device() const { return device_; }
  polychip_memory* memory() const { return memory_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  uint64_t byte_offset() const { return byte_offset_; }
  // Bytes of the memory the view points into, when known.
  std::optional<uint64_t> memory_size() const { return memory_size_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return element_count(shape_); }
  bool is_contiguous() const;
  // Throws INVALID_ARGUMENT when rank exceeds POLYCHIP_MAX_RANK.
  polychip_tensor to_abi() const;

 private:
  Device device_;
  polychip_memory* memory_ = nullptr;
  DType dtype_ = DType::kF32;
  Shape shape_;
  Shape strides_;
  uint64_t byte_offset_ = 0;
  std::optional<uint64_t> memory_size_;
};

class Tensor {
 public:
  Tensor() = default;
  // Uninitialised row-major tensor on `device`.
  Tensor(const Device& device, DType dtype, Shape shape);

  static Tensor from_host(const Device& device, DType dtype, Shape shape, const void* data);
  void copy_from_host(const void* data);  // numel * dtype_size bytes
  void copy_to_host(void* data) const;
  template <typename T>
  std::vector<T> to_vector() const {
    std::vector<T> out(static_cast<size_t>(numel()));
    copy_to_host(out.data());
    return out;
  }

  const Device& device() const { return buffer_->device(); }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return element_count(shape_); }
  uint64_t size_bytes() const { return static_cast<uint64_t>(numel()) * dtype_size(dtype_); }
  Buffer& buffer() const { return *buffer_; }
  TensorView view() const;
  operator TensorView() const { return view(); }

 private:
  std::shared_ptr<Buffer> buffer_;
  DType dtype_ = DType::kF32;
  Shape shape_;
};

}  // namespace polychip
