// CaseSpec: everything that defines one precision case, and its one-line id
// "<op>/<dtype>/<dims>[/<variant>]/seed=<n>", e.g.
// "gemm/f32/64x64x64/seed=7" or "exp/f16/1000/special+strided/seed=3".
// The id alone regenerates the case bit for bit (it is the reproducer).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "polychip/dtype.hpp"
#include "polychip/tensor.hpp"

namespace polychip::precision {

struct CaseSpec {
  std::string op;
  DType dtype = DType::kF32;  // the op's compute dtype T (cast: the source)
  // Problem dimensions; their meaning depends on the op (see problem.hpp).
  Shape dims;
  // Modifiers: an input distribution (normal, uniform, positive, wide,
  // special, offset, large), "strided", and op options ("ta", "tb", "beta",
  // "tf32", "tanh", "noncausal", "axis0", "i32", "to=bf16").
  std::vector<std::string> variant;
  uint64_t seed = 0;

  bool has(std::string_view token) const;
  // Value of a "key=value" token, or "" when absent.
  std::string value_of(std::string_view key) const;
  // The variant tokens joined by '+', as the id spells them ("" for none).
  std::string variant_string() const;
};

std::string case_id(const CaseSpec& spec);
// Throws Error(INVALID_ARGUMENT) naming the part of the id that is wrong.
CaseSpec parse_case_id(std::string_view id);

}  // namespace polychip::precision
