// Tensor (owns a Buffer) and TensorView (borrows memory): dtype, shape,
// strides in elements, device. Views convert to the ABI's polychip_tensor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "polychip/host_element.hpp"
#include "polychip/memory.hpp"

namespace polychip {

using Shape = std::vector<int64_t>;

Shape row_major_strides(const Shape& shape);

// Contiguous host data with a size, such as std::vector or std::span (not a
// C array, which goes through the pointer overloads).
template <typename Range>
concept HostRange = std::ranges::contiguous_range<Range> && std::ranges::sized_range<Range> &&
    !std::is_array_v<std::remove_cvref_t<Range>>;
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

  // Untyped host data: raw bytes, size_bytes() of them, unchecked (as are
  // pointers to char, unsigned char/uint8_t and std::byte).
  static Tensor from_host(const Device& device, DType dtype, Shape shape, const void* data);
  void copy_from_host(const void* data);
  void copy_to_host(void* data) const;

  // Typed host data: the element type must hold the dtype (host_element.hpp),
  // a range must hold numel() elements (raw-byte ranges: size_bytes());
  // otherwise INVALID_ARGUMENT naming both, before any byte is copied.
  template <typename T>
  requires(!std::is_void_v<T> && !kIsRawByte<std::remove_cv_t<T>>) static Tensor
      from_host(const Device& device, DType dtype, Shape shape, const T* data) {
    check_host_type<T>("Tensor::from_host", dtype);
    return from_host(device, dtype, std::move(shape), static_cast<const void*>(data));
  }
  template <HostRange Range>
  static Tensor from_host(const Device& device, DType dtype, Shape shape, const Range& data) {
    check_host_type<std::ranges::range_value_t<Range>>("Tensor::from_host", dtype);
    Tensor t(device, dtype, std::move(shape));
    t.copy_from_host(data);
    return t;
  }
  template <typename T>
  requires(!std::is_void_v<T> &&
           !kIsRawByte<std::remove_cv_t<T>>) void copy_from_host(const T* data) {
    check_host_type<T>("Tensor::copy_from_host", dtype_);
    copy_from_host(static_cast<const void*>(data));
  }
  template <HostRange Range>
  void copy_from_host(const Range& data) {
    check_host_range<std::ranges::range_value_t<Range>>("Tensor::copy_from_host",
                                                        std::ranges::size(data));
    copy_from_host(static_cast<const void*>(std::ranges::data(data)));
  }
  template <typename T>
  requires(!std::is_void_v<T> && !kIsRawByte<T>) void copy_to_host(T* data) const {
    check_host_type<T>("Tensor::copy_to_host", dtype_);
    copy_to_host(static_cast<void*>(data));
  }
  template <HostRange Range>
  void copy_to_host(Range&& data) const {
    check_host_range<std::ranges::range_value_t<Range>>("Tensor::copy_to_host",
                                                        std::ranges::size(data));
    copy_to_host(static_cast<void*>(std::ranges::data(data)));
  }
  // The elements as T (bool tensors: uint8_t, since std::vector<bool> packs bits).
  template <typename T>
  std::vector<T> to_vector() const {
    static_assert(HostElement<T> && !std::is_same_v<T, bool>,
                  "to_vector<T>: T is double, float, uint16_t, uint8_t, int8_t, int32_t or "
                  "int64_t (bool tensors: uint8_t, since std::vector<bool> packs bits)");
    check_host_element<T>("Tensor::to_vector", dtype_);
    std::vector<T> out(static_cast<size_t>(numel()));
    copy_to_host(static_cast<void*>(out.data()));
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
  template <typename T>
  static void check_host_type(std::string_view call, DType dtype) {
    static_assert(HostElement<T> || kIsRawByte<std::remove_cv_t<T>>,
                  "host data of a Tensor is double, float, uint16_t, uint8_t, int8_t, int32_t, "
                  "int64_t or bool (see polychip/host_element.hpp), or raw bytes through a "
                  "const void*");
    if constexpr (HostElement<T>) check_host_element<T>(call, dtype);
  }
  template <typename T>
  void check_host_range(std::string_view call, uint64_t count) const {
    check_host_type<T>(call, dtype_);
    if constexpr (kIsRawByte<std::remove_cv_t<T>>) {
      if (count != size_bytes()) throw_host_count_mismatch(call, count, size_bytes(), "bytes");
    } else if (count != static_cast<uint64_t>(numel())) {
      throw_host_count_mismatch(call, count, static_cast<uint64_t>(numel()), "elements");
    }
  }

  std::shared_ptr<Buffer> buffer_;
  DType dtype_ = DType::kF32;
  Shape shape_;
};

}  // namespace polychip
