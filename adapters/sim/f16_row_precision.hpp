// sim.f16_rows: the f32 row ops (reductions that sum, the softmax family,
// the norms, cross-entropy, and their backward ops) computed at f16
// precision: every f32 input and output is rounded to f16's 11 significant
// bits and handed back as f32. f32's exponent range is kept, so only the
// precision is lower: the chip a row-op tolerance that grows with the row
// length would let through (docs/sim-profiles.md).
#pragma once

#include <string_view>

#include "kernel_call.hpp"

namespace polychip::sim {

// The ops the defect touches (f32 calls only).
bool is_f16_precision_row_op(std::string_view op);

// `v` rounded to nearest (ties to even) at 11 significant bits; zeros,
// infinities and NaN unchanged.
double round_to_f16_precision(double v);

// Runs the cpu kernel of `call` on its f32 inputs rounded to f16 precision,
// then rounds its f32 outputs the same way. Calls whose first tensor is not
// f32 run unchanged.
polychip_status run_at_f16_precision(const cpu::KernelCall& call);

}  // namespace polychip::sim
