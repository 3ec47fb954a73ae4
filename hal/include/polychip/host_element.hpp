// Which C++ element type holds a dtype's elements unchanged on the host, so
// the typed accessors of Tensor (from_host, copy_*_host, to_vector) can refuse
// a mismatch instead of reading or writing past the end of a buffer:
//   f64 double, f32 float, f16/bf16 uint16_t (bits), f8e4m3/f8e5m2/u8 uint8_t,
//   i8 int8_t, i32 int32_t, i64 int64_t, bool uint8_t or bool.
// Pointers to char, unsigned char (uint8_t) and std::byte are raw bytes and
// are not checked, like a void pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "polychip/dtype.hpp"

namespace polychip {

template <typename T>
inline constexpr bool kIsHostElement =
    std::is_same_v<T, double> || std::is_same_v<T, float> || std::is_same_v<T, uint16_t> ||
    std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t> || std::is_same_v<T, int32_t> ||
    std::is_same_v<T, int64_t> || std::is_same_v<T, bool>;

template <typename T>
inline constexpr bool kIsRawByte =
    std::is_same_v<T, char> || std::is_same_v<T, unsigned char> || std::is_same_v<T, std::byte>;

template <typename T>
concept HostElement = kIsHostElement<std::remove_cv_t<T>>;

// The element's C++ name as written in messages ("double", "uint16_t").
template <HostElement T>
constexpr std::string_view host_element_name() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, double>) return "double";
  if constexpr (std::is_same_v<U, float>) return "float";
  if constexpr (std::is_same_v<U, uint16_t>) return "uint16_t";
  if constexpr (std::is_same_v<U, uint8_t>) return "uint8_t";
  if constexpr (std::is_same_v<U, int8_t>) return "int8_t";
  if constexpr (std::is_same_v<U, int32_t>) return "int32_t";
  if constexpr (std::is_same_v<U, int64_t>) return "int64_t";
  if constexpr (std::is_same_v<U, bool>) return "bool";
}

// The dtypes whose elements `T` holds unchanged.
template <HostElement T>
constexpr bool host_element_holds(DType dtype) {
  using U = std::remove_cv_t<T>;
  switch (dtype) {
    case DType::kF64:
      return std::is_same_v<U, double>;
    case DType::kF32:
      return std::is_same_v<U, float>;
    case DType::kF16:
    case DType::kBF16:
      return std::is_same_v<U, uint16_t>;
    case DType::kF8E4M3:
    case DType::kF8E5M2:
    case DType::kU8:
      return std::is_same_v<U, uint8_t>;
    case DType::kI8:
      return std::is_same_v<U, int8_t>;
    case DType::kI32:
      return std::is_same_v<U, int32_t>;
    case DType::kI64:
      return std::is_same_v<U, int64_t>;
    case DType::kBool:
      return std::is_same_v<U, uint8_t> || std::is_same_v<U, bool>;
  }
  return false;
}

// Throws INVALID_ARGUMENT: "`call`: <type> holds <dtypes>, not the tensor's
// <dtype> (use <type>)" naming both dtypes.
[[noreturn]] void throw_host_element_mismatch(std::string_view call, DType tensor_dtype,
                                              std::string_view element_name);
// Throws INVALID_ARGUMENT naming the size of the host data and the tensor's,
// both in `unit` ("elements", "bytes").
[[noreturn]] void throw_host_count_mismatch(std::string_view call, uint64_t host_count,
                                            uint64_t tensor_count, std::string_view unit);

template <HostElement T>
void check_host_element(std::string_view call, DType tensor_dtype) {
  if (!host_element_holds<T>(tensor_dtype))
    throw_host_element_mismatch(call, tensor_dtype, host_element_name<T>());
}

}  // namespace polychip
