// `polychip certify --suite training`: each device trains the standard
// workload for as many steps as the reference trace holds, from the trace's
// workload and seed; its loss curve is judged with the alignment tier
// (alignment.hpp) and its step-1 gradients by the step-0 diagnosis. Two
// cases per device (one under the statistical tier, judged against the
// envelope of several seeds' runs, which holds no step-1 gradients) go
// through the one results writer (results.json, junit.xml, the summary).
// With several devices, a last case trains them together, one
// data-parallel rank each (pool_training.hpp), and judges the pool's curve
// under the same tier: its adapter entry is named for the mix, "a+b+...",
// as the comm suite's, with ranks[] (spec, device type, rows of the batch).
#pragma once

#include "certify_options.hpp"
#include "loss_envelope.hpp"
#include "reference_trace.hpp"

namespace polychip::training {

// The trace shipped with polychip for the default workload in fp32
// (training/reference/, compiled in).
ReferenceTrace shipped_reference_trace();
// The statistical tier's envelope shipped for the same workload (5 seeds of
// the initial weights on the trace's device type, compiled in).
LossEnvelope shipped_loss_envelope();

// Exit code as `polychip certify`: 0 every device passes, 1 one fails, 2 a
// usage error (message on stderr), 3 the results could not be written.
int run_training_certify(const conformance::CertifyOptions& options);

}  // namespace polychip::training
