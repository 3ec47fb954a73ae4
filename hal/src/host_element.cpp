#include "polychip/host_element.hpp"

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip {
namespace {

// The element type that holds `dtype` (bool also accepts bool).
std::string_view host_element_for(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return host_element_name<double>();
    case DType::kF32:
      return host_element_name<float>();
    case DType::kF16:
    case DType::kBF16:
      return host_element_name<uint16_t>();
    case DType::kI8:
      return host_element_name<int8_t>();
    case DType::kI32:
      return host_element_name<int32_t>();
    case DType::kI64:
      return host_element_name<int64_t>();
    case DType::kF8E4M3:
    case DType::kF8E5M2:
    case DType::kU8:
    case DType::kBool:
      return host_element_name<uint8_t>();
  }
  return "?";
}

}  // namespace

void throw_host_element_mismatch(std::string_view call, DType tensor_dtype,
                                 std::string_view element_name) {
  std::string holds;
  for (DType d : kAllDTypes)
    if (host_element_for(d) == element_name || (element_name == "bool" && d == DType::kBool))
      holds += (holds.empty() ? "" : "/") + std::string(dtype_name(d));
  throw_error(
      StatusCode::kInvalidArgument,
      fmt::format("{}: the tensor is {}, but {} holds {} elements (use {})", call,
                  dtype_name(tensor_dtype), element_name, holds, host_element_for(tensor_dtype)));
}

void throw_host_count_mismatch(std::string_view call, uint64_t host_count, uint64_t tensor_count,
                               std::string_view unit) {
  throw_error(StatusCode::kInvalidArgument,
              fmt::format("{}: the host data has {} {}, the tensor {}", call, host_count, unit,
                          tensor_count));
}

}  // namespace polychip
