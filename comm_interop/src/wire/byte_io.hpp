// Bounds-checked little-endian serialisation for wire messages: a reader
// never reads past its input and throws DATA_CORRUPTION naming the field.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polychip/error.hpp"

namespace polychip::comm {

class ByteWriter {
 public:
  void u8(uint8_t v) { bytes_.push_back(v); }
  void u16(uint16_t v) { put(&v, 2); }
  void u32(uint32_t v) { put(&v, 4); }
  void u64(uint64_t v) { put(&v, 8); }
  void raw(const void* p, size_t n) { put(p, n); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    put(s.data(), s.size());
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  void put(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t> bytes_;
};

// memcpy that accepts (nullptr, 0): empty vectors and spans have a null
// data() and memcpy's arguments must never be null, even for 0 bytes.
inline void copy_bytes(void* dst, const void* src, size_t n) {
  if (n) std::memcpy(dst, src, n);
}

class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> bytes, const char* what) : bytes_(bytes), what_(what) {}
  uint8_t u8(const char* field) { return get<uint8_t>(field); }
  uint16_t u16(const char* field) { return get<uint16_t>(field); }
  uint32_t u32(const char* field) { return get<uint32_t>(field); }
  uint64_t u64(const char* field) { return get<uint64_t>(field); }
  void raw(void* out, size_t n, const char* field) {
    need(n, field);
    copy_bytes(out, bytes_.data() + pos_, n);
    pos_ += n;
  }
  std::string str(const char* field, uint32_t max_length) {
    uint32_t n = u32(field);
    if (n > max_length) {
      throw_error(StatusCode::kDataCorruption, std::string(what_) + ": field '" + field +
                                                   "' length " + std::to_string(n) + " exceeds " +
                                                   std::to_string(max_length));
    }
    need(n, field);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  size_t remaining() const { return bytes_.size() - pos_; }
  void expect_end() const {
    if (remaining() != 0) {
      throw_error(
          StatusCode::kDataCorruption,
          std::string(what_) + ": " + std::to_string(remaining()) + " unexpected trailing bytes");
    }
  }

 private:
  template <typename T>
  T get(const char* field) {
    T v;
    raw(&v, sizeof(T), field);
    return v;
  }
  void need(size_t n, const char* field) const {
    if (n > remaining()) {
      throw_error(StatusCode::kDataCorruption,
                  std::string(what_) + ": truncated at field '" + field + "' (need " +
                      std::to_string(n) + " bytes, have " + std::to_string(remaining()) + ")");
    }
  }
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  const char* what_;
};

}  // namespace polychip::comm
