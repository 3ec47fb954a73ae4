// Defects of the simulated chips that are not numerics of one formula but
// of how a kernel touches memory or reads its arguments: a write past an
// output, a run-to-run difference, a dropped vector tail, a low-precision
// path on long rows, an ignored attribute, lost scatter updates, a
// broadcast or strided input read as contiguous, f32 row ops at f16
// precision. Each wraps the faithful cpu kernel of the ops it touches
// (docs/sim-profiles.md).
#pragma once

#include <cstdint>
#include <span>

#include "kernel_call.hpp"

namespace polychip::sim {

enum class KernelDefect {
  kNone,
  kWritePastEnd,           // one element of zeros written past the output
  kNondeterministic,       // every other call: output element 0 one ulp off
  kVectorTailDropped,      // 64-wide loop: a tail of 63 elements drops its last
  kLongRowLowPrecision,    // rows longer than 4096: row sum accumulated in f16
  kIgnoredEps,             // the eps attribute is ignored (1e-5 used)
  kLostUpdates,            // repeated ids: the last row wins instead of the sum
  kBroadcastAsContiguous,  // a stride-0 input is read as if contiguous
  kStridesIgnored,         // a non-contiguous input is read as if contiguous
  kF16RowPrecision,        // f32 row ops: inputs and outputs rounded to f16 precision
};

// A defect of the device's copy engine rather than of a kernel.
enum class CopyDefect {
  kNone,
  // Device-to-host copies longer than a 4 KiB page whose size is not a
  // multiple of it corrupt their last byte (an off-by-one in the partial
  // final page of a page-chunked DMA).
  kPartialPageTail,
  // Host-to-device copies to a destination that is not 64-byte aligned
  // write its whole first 64-byte line: the bytes of that line before the
  // destination become zeros (a line-granular DMA write whose byte mask
  // covers only the end of the line).
  kUnalignedHeadLine,
};

// Applies `defect` to the `bytes` a device-to-host copy has just written at `dst`.
void apply_copy_defect(CopyDefect defect, char* dst, uint64_t bytes);
// Applies `defect` to a host-to-device copy that has just written at byte
// `offset` of the allocation starting at `base`.
void apply_upload_defect(CopyDefect defect, char* base, uint64_t offset);

// Runs `call` with `defect` (the profile has checked that the op is the
// defect's). `memory_end[k]` is one past the last byte of tensor k's memory
// (nullptr for none): the defect never reads or writes beyond it.
polychip_status run_defective_kernel(const cpu::KernelCall& call, KernelDefect defect,
                                     std::span<char* const> memory_end);

}  // namespace polychip::sim
