#include "coverage.hpp"

#include "polychip/op_contract.hpp"
#include "problem.hpp"

namespace polychip::precision {
namespace {

constexpr int64_t kLongRow = 4096;

bool loops_over_rows(const OpSpec& op) {
  const std::string_view fam = op.family;
  return fam == "reduction" || fam == "softmax" || fam == "norm" || fam == "loss";
}

std::string attr_point(const AttrSpec& a) { return std::string("attr:") + a.name; }

}  // namespace

Coverage coverage_of(const std::vector<CaseSpec>& cases, HostOpFn oracle) {
  Coverage cov;
  for (const OpSpec& op : op_contract()) {
    auto& points = cov[op.name];
    for (DType dt : op.dtypes)
      if (dt == DType::kF32 || dt == DType::kF16 || dt == DType::kBF16)
        points[std::string("dtype:") + std::string(dtype_name(dt))] = 0;
    for (const AttrSpec& a : op.attrs) points[attr_point(a)] = 0;
    if (loops_over_rows(op)) points["row:>=4096"] = 0;
  }
  for (const CaseSpec& spec : cases) {
    auto it = cov.find(spec.op);
    if (it == cov.end()) continue;
    auto& points = it->second;
    if (auto d = points.find(std::string("dtype:") + std::string(dtype_name(spec.dtype)));
        d != points.end())
      ++d->second;
    const Problem p = build_problem(spec, oracle);
    const polychip_op_attrs defaults = default_attrs(*p.op);
    for (const AttrSpec& a : p.op->attrs) {
      const bool changed = a.is_float ? p.attrs.floats[a.slot] != defaults.floats[a.slot]
                                      : p.attrs.ints[a.slot] != defaults.ints[a.slot];
      if (changed) ++points[attr_point(a)];
    }
    if (loops_over_rows(*p.op) && !p.inputs.empty() && !p.inputs[0].shape.empty() &&
        p.inputs[0].shape.back() >= kLongRow)
      ++points["row:>=4096"];
  }
  return cov;
}

std::vector<std::string> coverage_holes(const Coverage& coverage) {
  std::vector<std::string> holes;
  for (const auto& [op, points] : coverage) {
    std::string missing;
    for (const auto& [point, n] : points)
      if (n == 0) missing += (missing.empty() ? "" : ", ") + point;
    if (!missing.empty()) holes.push_back(op + ": " + missing);
  }
  return holes;
}

}  // namespace polychip::precision
