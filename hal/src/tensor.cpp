#include "polychip/tensor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "polychip/error.hpp"

namespace polychip {
namespace {

std::string shape_text(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

}  // namespace

Shape row_major_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

int64_t element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw_error(StatusCode::kInvalidArgument,
                  fmt::format("shape {} has a negative dimension", shape_text(shape)));
    // A wrapped count would size a buffer smaller than the shape it serves.
    if (__builtin_mul_overflow(n, d, &n))
      throw_error(StatusCode::kInvalidArgument,
                  fmt::format("shape {} has more elements than 2^63 - 1", shape_text(shape)));
  }
  return n;
}

TensorView::TensorView(Device device, polychip_memory* memory, DType dtype, Shape shape,
                       Shape strides, uint64_t byte_offset)
    : device_(std::move(device)),
      memory_(memory),
      dtype_(dtype),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      byte_offset_(byte_offset) {
  if (strides_.size() != shape_.size())
    throw_error(
        StatusCode::kInvalidArgument,
        fmt::format("TensorView: {} strides for {} dimensions", strides_.size(), shape_.size()));
}

TensorView::TensorView(const Buffer& buffer, DType dtype, Shape shape, Shape strides,
                       uint64_t byte_offset)
    : TensorView(buffer.device(), buffer.handle(), dtype, std::move(shape), std::move(strides),
                 byte_offset) {
  memory_size_ = buffer.size();
}

bool TensorView::is_contiguous() const { return strides_ == row_major_strides(shape_); }

polychip_tensor TensorView::to_abi() const {
  if (shape_.size() > POLYCHIP_MAX_RANK)
    throw_error(StatusCode::kInvalidArgument, fmt::format("tensor rank {} exceeds the maximum {}",
                                                          shape_.size(), POLYCHIP_MAX_RANK));
  polychip_tensor t{};
  t.struct_size = POLYCHIP_STRUCT_SIZE(polychip_tensor, byte_offset);
  t.dtype = static_cast<polychip_dtype>(dtype_);
  t.rank = static_cast<int32_t>(shape_.size());
  for (size_t d = 0; d < shape_.size(); ++d) {
    t.shape[d] = shape_[d];
    t.strides[d] = strides_[d];
  }
  t.memory = memory_;
  t.byte_offset = byte_offset_;
  return t;
}

Tensor::Tensor(const Device& device, DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(element_count(shape_)), dtype_size(dtype_),
                             &bytes))
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("Tensor: shape {} of {} needs more than 2^64 bytes", shape_text(shape_),
                            dtype_name(dtype_)));
  buffer_ = std::make_shared<Buffer>(device, bytes);
}

Tensor Tensor::from_host(const Device& device, DType dtype, Shape shape, const void* data) {
  Tensor t(device, dtype, std::move(shape));
  t.copy_from_host(data);
  return t;
}

void Tensor::copy_from_host(const void* data) { buffer_->copy_from_host(data, size_bytes()); }
void Tensor::copy_to_host(void* data) const { buffer_->copy_to_host(data, size_bytes()); }

TensorView Tensor::view() const {
  return TensorView(*buffer_, dtype_, shape_, row_major_strides(shape_));
}

}  // namespace polychip
