// The float64 oracle: an independent implementation of every op of the op
// contract, computed exactly enough to serve as "the true result" (long
// double arithmetic, compensated sums, erf/erfc/expm1-style stable forms).
// Results are NOT rounded to the output dtype: the harness measures each
// implementation's error in the output dtype against these values.
// Shares no code with any adapter's kernels.
#pragma once

#include <span>
#include <string_view>

#include "precision/host_tensor.hpp"

namespace polychip::precision {

// A HostOpFn. Validates the call against the contract, then fills every
// output. Throws Error(INVALID_ARGUMENT) on bad shapes/attributes and on
// data errors (an id or target out of range); Error(UNSUPPORTED) for an op
// the oracle does not know.
void oracle_run(const OpSpec& op, std::span<const HostTensor> inputs, std::span<HostTensor> outputs,
                const polychip_op_attrs& attrs);

inline constexpr HostOpFn kOracle = &oracle_run;

// Whether the oracle implements `op_name` (every op of contract v1 does).
bool oracle_supports(std::string_view op_name);

}  // namespace polychip::precision
