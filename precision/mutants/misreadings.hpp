// The likely misreadings of each op's contract, each one a mutant chip: the
// cpu adapter with that op's kernel patched to misread it (mutant_kernel.hpp).
// Mutation testing judges the suite by the mutants it kills: every mutant
// must fail certification at quick in every dtype where it applies. The
// list is generated from the op's contract entry (its attributes, index
// tensors, family) and its factors (op_factors.hpp: the layouts, value
// classes and lengths its cases reach), so a new op gets its mutants with
// its entries.
#pragma once

#include <string>
#include <vector>

#include "polychip/dtype.hpp"
#include "precision/harness/op_factors.hpp"

namespace polychip::precision {

enum class Misreading {
  kAttributeAtDefault,         // one attribute ignored: the kernel uses the contract's default
  kOutputAtLowerPrecision,     // outputs rounded to the next lower precision's significand
  kSubnormalsFlushed,          // subnormal inputs read and outputs written as zero
  kNanNotPropagated,           // NaN outputs written as zero
  kStridedReadAsContiguous,    // a strided input read as if dense
  kBroadcastReadAsContiguous,  // a stride-0 (broadcast) input read as if dense
  kVectorTailZeroed,           // the last element of a length off a multiple of 32 is zero
  kLongRowsAtLowerPrecision,   // outputs of lines longer than 4,096 at the lower precision
  kIndexInSixteenBits,         // integer indices (ids, targets, argmax) wrapped to int16
};

struct Mutant {
  std::string op;
  Misreading misreading = Misreading::kOutputAtLowerPrecision;
  int attr = -1;              // kAttributeAtDefault: index into the op's OpSpec::attrs
  std::vector<DType> dtypes;  // where the suite must catch it
  // "gemm: trans_a ignored (its default 0 used)".
  std::string name() const;
};

// The misreadings of one op that apply to it.
std::vector<Mutant> mutants_of(const OpFactors& op);
// Every op's, in the contract's order.
std::vector<Mutant> all_mutants();

// Significand bits of the next lower precision than `dtype` (f64 -> 24,
// f32 -> 11, f16 -> 8, bf16 -> 5, the f8 formats one bit fewer).
int lower_precision_bits(DType dtype);

}  // namespace polychip::precision
