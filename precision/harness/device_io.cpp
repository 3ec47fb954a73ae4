#include "device_io.hpp"

#include <cstring>

#include <fmt/format.h>

namespace polychip::precision {
namespace {
constexpr uint8_t kCanary = 0xFF;
}  // namespace

DeviceTensor::DeviceTensor(const Device& device, const HostTensor& host, bool strided, bool upload,
                           bool broadcast)
    : dtype_(host.dtype), shape_(host.shape) {
  const uint64_t es = dtype_size(dtype_);
  if (!strided || shape_.empty()) {
    strides_ = row_major_strides(shape_);
  } else {
    // Every other element of a row, and one spare element between rows.
    strides_.assign(shape_.size(), 0);
    int64_t step = 2 * shape_.back() + 1;
    strides_.back() = 2;
    for (size_t d = shape_.size() - 1; d-- > 0;) {
      strides_[d] = step;
      step *= shape_[d];
    }
  }
  if (broadcast && !shape_.empty()) strides_[0] = 0;
  byte_offset_ = kGuardBytes + (strided ? es : 0);
  const int64_t n = element_count(shape_);
  end_offset_ = byte_offset_;
  if (n > 0) {
    uint64_t last = 0;
    for (size_t d = 0; d < shape_.size(); ++d)
      last += static_cast<uint64_t>((shape_[d] - 1) * strides_[d]);
    end_offset_ = byte_offset_ + (last + 1) * es;
  }
  size_bytes_ = end_offset_ + (strided && n > 0 ? es : 0) + kGuardBytes;
  buffer_ = Buffer(device, size_bytes_);
  std::vector<uint8_t> staging(size_bytes_, kCanary);
  if (upload) {
    auto offsets = element_offsets();
    for (size_t i = 0; i < offsets.size(); ++i)
      store_from_f64(host.values[i], staging.data() + offsets[i], dtype_);
  }
  if (size_bytes_) buffer_.copy_from_host(staging.data(), size_bytes_);
}

std::vector<uint64_t> DeviceTensor::element_offsets() const {
  const int64_t n = element_count(shape_);
  const uint64_t es = dtype_size(dtype_);
  std::vector<uint64_t> out(static_cast<size_t>(n));
  std::vector<int64_t> index(shape_.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t off = 0;
    for (size_t d = 0; d < shape_.size(); ++d) off += static_cast<uint64_t>(index[d] * strides_[d]);
    out[static_cast<size_t>(i)] = byte_offset_ + off * es;
    for (size_t d = shape_.size(); d-- > 0;) {
      if (++index[d] < shape_[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

TensorView DeviceTensor::view() const {
  return TensorView(buffer_, dtype_, shape_, strides_, byte_offset_);
}

HostTensor DeviceTensor::download() const {
  HostTensor host;
  host.dtype = dtype_;
  host.shape = shape_;
  std::vector<uint8_t> staging(size_bytes_);
  if (size_bytes_) buffer_.copy_to_host(staging.data(), size_bytes_);
  for (uint64_t off : element_offsets())
    host.values.push_back(load_as_f64(staging.data() + off, dtype_));
  return host;
}

std::string DeviceTensor::check_canary() const {
  std::vector<uint8_t> staging(size_bytes_);
  if (size_bytes_) buffer_.copy_to_host(staging.data(), size_bytes_);
  std::vector<bool> inside(size_bytes_, false);
  const uint64_t es = dtype_size(dtype_);
  for (uint64_t off : element_offsets())
    for (uint64_t b = 0; b < es; ++b) inside[off + b] = true;
  for (uint64_t b = 0; b < size_bytes_; ++b) {
    if (inside[b] || staging[b] == kCanary) continue;
    // Name the offset relative to the elements, as a kernel author counts.
    std::string where;
    if (b < byte_offset_)
      where = fmt::format("{} byte(s) before its first element", byte_offset_ - b);
    else if (b >= end_offset_)
      where = fmt::format("{} byte(s) past its last element (element offset +{})",
                          b - end_offset_ + 1, (b - end_offset_) / es + 1);
    else
      where =
          fmt::format("in a gap between its elements, byte {} after the first", b - byte_offset_);
    return fmt::format("a write outside its elements: {} changed 0x{:02x} to 0x{:02x}", where,
                       kCanary, staging[b]);
  }
  return "";
}

}  // namespace polychip::precision
