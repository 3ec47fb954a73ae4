// The precision suite's case lists per level. quick: every op of the
// contract in f32, f16 and bf16 (f64 for a few), the inputs that expose the
// classic defects (wide ranges, special values, large logits, offset
// activations, strided views, edge shapes); under a few seconds per device.
// standard adds more shapes, seeds and f64 everywhere; full adds large
// problems and more seeds.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "case_spec.hpp"
#include "op_factors.hpp"

namespace polychip::precision {

enum class Level { kQuick, kStandard, kFull };

// Seeds tell a case's origin: the listed cases count theirs from 1,
// standard's fuzzed shapes from kFirstFuzzedSeed, the rows of each op's
// covering array (op_factors.hpp) from kFirstCrossedSeed.
constexpr uint64_t kFirstFuzzedSeed = 100;
constexpr uint64_t kFirstCrossedSeed = 1000;

// Throws Error(INVALID_ARGUMENT) naming the valid levels.
Level parse_level(std::string_view name);
std::string_view level_name(Level level);

// The t of the t-way covering arrays a level crosses each op's factors in
// (op_factors.hpp): 2 at quick, 3 from standard on.
int crossing_strength(Level level);

// The cases of the rows of a strength-t covering array over the op's
// factors (seeds from kFirstCrossedSeed).
std::vector<CaseSpec> crossed_cases(const OpFactors& op, int strength);

// Deterministic: the same level always yields the same cases, in order.
std::vector<CaseSpec> cases_for_level(Level level);

}  // namespace polychip::precision
