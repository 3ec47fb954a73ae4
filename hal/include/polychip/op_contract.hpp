// The operator contract v1: the single source of truth for what each op
// means, which tensors it takes (inputs first, then outputs), which dtypes
// are legal and what each attribute slot holds. The dispatcher validates
// every call against it before an adapter sees it; docs/op-contract.md and
// the precision suite are generated from / driven by the same table.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polychip/adapter_abi.h"
#include "polychip/dtype.hpp"

namespace polychip {

// How a tensor's dtype relates to the op's compute dtype T (the dtype of
// the op's first tensor that has role kT).
enum class DTypeRole {
  kT,         // the op's floating compute dtype (f64, f32, f16, bf16)
  kF32,       // always f32 (statistics, losses, master weights)
  kIndex,     // i64 or i32 (token ids, targets, argmax results)
  kAnyFloat,  // any floating dtype independent of T (cast source/target)
};

struct TensorSpec {
  const char* name;
  bool is_output;
  DTypeRole dtype_role;
  const char* shape;  // documentation, e.g. "[M, N]"
};

struct AttrSpec {
  const char* name;
  bool is_float;  // floats[slot] when true, ints[slot] otherwise
  int slot;
  double default_value;
  const char* doc;
};

// A call as the contract sees it: the tensors in order and the attributes.
struct OpCall {
  std::span<const polychip_tensor> tensors;
  const polychip_op_attrs* attrs;
  int64_t i(int slot) const { return attrs->ints[slot]; }
  double f(int slot) const { return attrs->floats[slot]; }
};

struct OpSpec {
  const char* name;
  const char* family;   // "gemm", "elementwise", "reduction", "norm", ...
  const char* summary;  // the semantics, one paragraph
  std::vector<TensorSpec> tensors;
  std::vector<AttrSpec> attrs;
  std::vector<DType> dtypes;  // legal compute dtypes T
  // Shape and attribute rules beyond dtypes: returns "" when valid, else a
  // message naming the offending argument.
  std::string (*check)(const OpCall& call);
  // Output tensors that may share memory exactly with an input (in-place).
  bool outputs_may_alias_inputs;

  // Inputs come first in `tensors`, then the outputs.
  size_t num_inputs() const {
    size_t n = 0;
    for (const TensorSpec& t : tensors) n += t.is_output ? 0 : 1;
    return n;
  }
  size_t num_outputs() const { return tensors.size() - num_inputs(); }
};

// All ops, in documentation order.
const std::vector<OpSpec>& op_contract();
// nullptr when the name is not in the contract.
const OpSpec* find_op(std::string_view name);
// Default attributes of an op (every slot not named is 0).
polychip_op_attrs default_attrs(const OpSpec& op);
// Full validation of a call: tensor count, dtypes, ranks, shapes, strides,
// aliasing, then op.check. Returns "" or a message naming the argument.
std::string validate_call(const OpSpec& op, const OpCall& call);

// Attribute slot names shared by several ops.
namespace attr {
// gemm
inline constexpr int kTransA = 0, kTransB = 1, kMathMode = 2;  // ints
inline constexpr int kAlpha = 0, kBeta = 1;                    // floats
// reductions, softmax: ints
inline constexpr int kAxis = 0;
// gelu, gelu_backward: ints
inline constexpr int kGeluApproximate = 0;  // 0 erf form, 1 tanh form
// fill: floats
inline constexpr int kFillValue = 0;
// layernorm, rmsnorm: floats
inline constexpr int kEps = 0;
// attention: floats / ints
inline constexpr int kScale = 0;
inline constexpr int kCausal = 0;
// rotary: ints
inline constexpr int kInverse = 0;
// adamw: floats / ints
inline constexpr int kLr = 0, kBeta1 = 1, kBeta2 = 2, kAdamEps = 3, kWeightDecay = 4;
inline constexpr int kStep = 0;
}  // namespace attr

// Gemm math modes (attr::kMathMode).
enum class MathMode : int64_t {
  kStrictF32 = 0,                  // IEEE f32 products, f32 accumulation
  kTf32Allowed = 1,                // f32 inputs may be rounded to TF32 (10-bit mantissa)
  kReducedPrecisionReduction = 2,  // f16/bf16 may accumulate in their own dtype
};

}  // namespace polychip
