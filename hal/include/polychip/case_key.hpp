// The text that names one op case: "<op>/<dtype>/<dims>[/<variant>]/seed=<n>",
// e.g. "gemm/f32/64x64x64/tf32/seed=7" ("scalar" for no dims). The precision
// suite's case id and a recorded NVIDIA trace's record key are this text, so
// a trace names the suite's cases with the suite's own ids.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "polychip/dtype.hpp"

namespace polychip {

// `variant`: the case's variant tokens joined by '+', or empty.
std::string case_key(std::string_view op, DType dtype, std::span<const int64_t> dims,
                     std::string_view variant, uint64_t seed);

}  // namespace polychip
