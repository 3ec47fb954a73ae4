#include "misreadings.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "polychip/op_contract.hpp"
#include "precision/harness/tolerance.hpp"

namespace polychip::precision {
namespace {

bool has_value(const OpFactors& op, std::string_view factor, std::string_view label) {
  for (const Factor& f : op.factors)
    if (f.name == factor)
      for (const FactorValue& v : f.values)
        if (v.label == label) return true;
  return false;
}

std::vector<DType> factor_dtypes(const OpFactors& op) {
  std::vector<DType> dtypes;
  for (const Factor& f : op.factors)
    for (const FactorValue& v : f.values)
      if (v.dtype) dtypes.push_back(*v.dtype);
  return dtypes;
}

bool has_tensor_role(const OpSpec& spec, DTypeRole role, bool output) {
  return std::any_of(spec.tensors.begin(), spec.tensors.end(), [&](const TensorSpec& t) {
    return t.dtype_role == role && t.is_output == output;
  });
}

bool has_floating_output(const OpSpec& spec) {
  return std::any_of(spec.tensors.begin(), spec.tensors.end(), [](const TensorSpec& t) {
    return t.is_output && t.dtype_role != DTypeRole::kIndex;
  });
}

}  // namespace

std::string Mutant::name() const {
  const OpSpec& spec = *find_op(op);
  switch (misreading) {
    case Misreading::kAttributeAtDefault: {
      const AttrSpec& a = spec.attrs.at(static_cast<size_t>(attr));
      return fmt::format("{}: {} ignored (its default {} used)", op, a.name, a.default_value);
    }
    case Misreading::kOutputAtLowerPrecision:
      return op + ": outputs rounded to the next lower precision";
    case Misreading::kSubnormalsFlushed:
      return op + ": subnormal inputs and outputs flushed to zero";
    case Misreading::kNanNotPropagated:
      return op + ": NaN results written as zero";
    case Misreading::kStridedReadAsContiguous:
      return op + ": a strided input read as dense";
    case Misreading::kBroadcastReadAsContiguous:
      return op + ": a broadcast (stride 0) input read as dense";
    case Misreading::kVectorTailZeroed:
      return op + ": the last element of a length off a multiple of 32 left zero";
    case Misreading::kLongRowsAtLowerPrecision:
      return op + ": lines longer than 4,096 at the next lower precision";
    case Misreading::kIndexInSixteenBits:
      return op + ": indices held in 16 bits";
  }
  return op;
}

int lower_precision_bits(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return 24;
    case DType::kF32:
      return 11;
    case DType::kF16:
      return 8;
    case DType::kBF16:
      return 4;
    case DType::kF8E4M3:
      return 3;
    default:
      return 2;
  }
}

std::vector<Mutant> mutants_of(const OpFactors& op) {
  const OpSpec& spec = *find_op(op.op);
  const std::vector<DType> dtypes = factor_dtypes(op);
  std::vector<Mutant> out;
  auto add = [&](Misreading m, int attr = -1) { out.push_back({op.op, m, attr, dtypes}); };
  for (size_t a = 0; a < spec.attrs.size(); ++a)
    add(Misreading::kAttributeAtDefault, static_cast<int>(a));
  if (has_floating_output(spec)) add(Misreading::kOutputAtLowerPrecision);
  if (has_value(op, "values", "special") || has_value(op, "values", "wide"))
    add(Misreading::kSubnormalsFlushed);
  if (has_value(op, "values", "special") && has_floating_output(spec))
    add(Misreading::kNanNotPropagated);
  if (has_value(op, "layout", "strided")) add(Misreading::kStridedReadAsContiguous);
  if (has_value(op, "layout", "broadcast")) add(Misreading::kBroadcastReadAsContiguous);
  if (spec.family == std::string_view("elementwise")) add(Misreading::kVectorTailZeroed);
  if (is_row_op(op.op)) add(Misreading::kLongRowsAtLowerPrecision);
  if (has_tensor_role(spec, DTypeRole::kIndex, false) ||
      has_tensor_role(spec, DTypeRole::kIndex, true))
    add(Misreading::kIndexInSixteenBits);
  return out;
}

std::vector<Mutant> all_mutants() {
  std::vector<Mutant> all;
  for (const OpFactors& op : op_factor_registry())
    for (Mutant& m : mutants_of(op)) all.push_back(std::move(m));
  return all;
}

}  // namespace polychip::precision
