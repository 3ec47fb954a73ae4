// The precision suite's case lists per level. quick: every op of the
// contract in f32, f16 and bf16 (f64 for a few), the inputs that expose the
// classic defects (wide ranges, special values, large logits, offset
// activations, strided views, edge shapes); under a few seconds per device.
// standard adds more shapes, seeds and f64 everywhere; full adds large
// problems and more seeds.
#pragma once

#include <string_view>
#include <vector>

#include "case_spec.hpp"

namespace polychip::precision {

enum class Level { kQuick, kStandard, kFull };

// Throws Error(INVALID_ARGUMENT) naming the valid levels.
Level parse_level(std::string_view name);
std::string_view level_name(Level level);

// Deterministic: the same level always yields the same cases, in order.
std::vector<CaseSpec> cases_for_level(Level level);

}  // namespace polychip::precision
