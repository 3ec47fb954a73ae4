#include "polychip/case_key.hpp"

#include <fmt/format.h>

namespace polychip {

std::string case_key(std::string_view op, DType dtype, std::span<const int64_t> dims,
                     std::string_view variant, uint64_t seed) {
  std::string key = fmt::format("{}/{}/", op, dtype_name(dtype));
  for (size_t k = 0; k < dims.size(); ++k) key += fmt::format("{}{}", k ? "x" : "", dims[k]);
  if (dims.empty()) key += "scalar";
  if (!variant.empty()) key += fmt::format("/{}", variant);
  return key + fmt::format("/seed={}", seed);
}

}  // namespace polychip
