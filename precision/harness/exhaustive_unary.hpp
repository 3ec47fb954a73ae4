// Exhaustive f32 checks of unary math (the OpenCL CTS's math_brute_force
// practice): every f32 bit pattern in a range — all 2^32 at the full level —
// runs through the device's own kernel in dispatch chunks, and every result
// is checked against the op's tolerance. The check is two-stage so the
// oracle's cost stays low: a float64 evaluation decides almost every
// element; only elements whose verdict it cannot settle (error within 1e-5
// of the bound, an exact value at a binade edge or at the overflow
// threshold) go to the long double oracle that every other case uses.
//
// Case id: "<op>/f32/<count>/exhaustive+from=0x<first bits>/seed=1", e.g.
// "exp/f32/67108864/exhaustive+from=0x3c000000/seed=1": the inputs are the
// bit patterns first, first + 1, ..., first + count - 1 (NaN and Inf
// included). The seed carries no meaning here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "case_runner.hpp"
#include "case_spec.hpp"
#include "verdict.hpp"

namespace polychip::precision {

// exp, log, sqrt, rsqrt, tanh, sigmoid, gelu, silu.
std::span<const std::string_view> exhaustive_f32_ops();

// Elements per dispatch: a failure's reproducer names the chunk it is in.
inline constexpr uint64_t kExhaustiveDispatchChunk = uint64_t{1} << 22;

// The case of `count` bit patterns of `op` from `first_bits` on.
CaseSpec exhaustive_f32_case(std::string_view op, uint32_t first_bits, uint64_t count);

// Every f32 input of every op in exhaustive_f32_ops(), `per_case` patterns
// per case (a power of two dividing 2^32): the full level's cases.
std::vector<CaseSpec> exhaustive_f32_cases(uint64_t per_case);

// Whether `spec` is an exhaustive f32 case (f32 with the exhaustive token).
bool is_exhaustive_f32(const CaseSpec& spec);

struct ExhaustiveOutcome {
  Verdict verdict = Verdict::kPass;
  std::string message;
  // Fields for the case record: metrics, tolerance, failures.
  nlohmann::json fields = nlohmann::json::object();
};

// Runs the case on ctx's device. Bad ids (unknown op, a range past 2^32)
// fail the case with a harness message; adapter errors fail it with the
// adapter's message; NotSupported when the device has no f32 kernel.
ExhaustiveOutcome run_exhaustive_f32(const CaseSpec& spec, const CaseContext& ctx);

}  // namespace polychip::precision
