#include "coverage.hpp"

#include <string_view>

#include <fmt/format.h>

#include "exhaustive_unary.hpp"
#include "polychip/op_contract.hpp"
#include "problem.hpp"

namespace polychip::precision {
namespace {

std::string attr_point(const AttrSpec& a) { return std::string("attr:") + a.name; }

bool is_one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (n == name) return true;
  return false;
}

bool is_binary(std::string_view op) { return is_one_of(op, {"add", "sub", "mul", "div"}); }
bool is_math(std::string_view op) {
  return is_binary(op) || is_one_of(op, {"neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
                                         "relu", "gelu", "silu", "cast"});
}

// The length of the loop a kernel of this op runs longest, from the case's
// dims (problem.hpp gives their meaning per family); 0 when none applies.
int64_t loop_length(const OpSpec& op, const CaseSpec& spec) {
  const std::string_view fam = op.family;
  const Shape& d = spec.dims;
  if (d.empty()) return 0;
  if (fam == "elementwise" || fam == "optimizer") return element_count(d);
  if (fam == "reduction" || fam == "softmax" || fam == "norm" || fam == "loss")
    return spec.has("axis0") ? d.front() : d.back();
  if (fam == "gemm") return d.back();                       // K
  if (fam == "attention") return d.size() == 4 ? d[2] : 0;  // the sequence
  if (fam == "embedding") return d.back();                  // a row of D
  if (fam == "rotary") return d.back() / 2;                 // pairs of a head's D
  return 0;
}

// Where a real model's loops are: GPT-2's 1,024-token context for attention,
// rows of 4,096 and more (hidden sizes, the vocabulary) elsewhere.
int64_t model_length(const OpSpec& op) {
  return std::string_view(op.family) == "attention" ? 1024 : 4096;
}

bool power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// Every point of `op`'s model, each with count 0.
std::map<std::string, int> points_of(const OpSpec& op) {
  std::map<std::string, int> points;
  const std::string_view fam = op.family, name = op.name;
  for (DType dt : op.dtypes)
    if (dt == DType::kF32 || dt == DType::kF16 || dt == DType::kBF16)
      points[std::string("dtype:") + std::string(dtype_name(dt))] = 0;
  for (const AttrSpec& a : op.attrs) points[attr_point(a)] = 0;
  // Loop lengths: just past and just short of a power of two (a vector tail,
  // a block edge), below one vector, and as long as a real model's.
  if (name != "fill") {
    points["len:2^k-1"] = 0;
    points["len:2^k+1"] = 0;
    points["len:>=model"] = 0;
  }
  if (fam == "elementwise") points["len:<16"] = 0;
  if (fam == "elementwise" || fam == "gemm") points["len:empty"] = 0;
  // Layouts.
  if (fam == "elementwise" && name != "fill") points["layout:strided"] = 0;
  if (is_binary(name)) points["layout:broadcast"] = 0;
  if (fam == "reduction") points["layout:strided"] = 0;
  if (fam == "reduction" || fam == "softmax") points["layout:axis0"] = 0;
  if (fam == "gemm") points["layout:transposed"] = 0;
  // Values.
  if (is_math(name) || name == "gemm") points["values:special"] = 0;
  if (is_one_of(name,
                {"gemm", "reduce_sum", "embedding_backward", "attention", "layernorm", "rmsnorm"}))
    points["values:exact"] = 0;
  if (is_one_of(name, {"softmax", "log_softmax", "cross_entropy"})) points["values:large"] = 0;
  if (is_one_of(name, {"layernorm", "rmsnorm"})) points["values:offset"] = 0;
  if (name == "embedding_backward") points["values:repeated"] = 0;
  return points;
}

void count(std::map<std::string, int>& points, const std::string& point) {
  if (auto it = points.find(point); it != points.end()) ++it->second;
}

}  // namespace

Coverage coverage_of(const std::vector<CaseSpec>& cases, HostOpFn oracle) {
  Coverage cov;
  for (const OpSpec& op : op_contract()) cov[op.name] = points_of(op);
  for (const CaseSpec& spec : cases) {
    auto it = cov.find(spec.op);
    if (it == cov.end()) continue;
    auto& points = it->second;
    const OpSpec& op = *find_op(spec.op);
    count(points, std::string("dtype:") + std::string(dtype_name(spec.dtype)));
    const int64_t len = loop_length(op, spec);
    if (len >= 15 && power_of_two(len + 1)) count(points, "len:2^k-1");
    if (len >= 17 && power_of_two(len - 1)) count(points, "len:2^k+1");
    if (len > 0 && len < 16) count(points, "len:<16");
    if (len >= model_length(op)) count(points, "len:>=model");
    for (int64_t d : spec.dims)
      if (d == 0) {
        count(points, "len:empty");
        break;
      }
    if (spec.has("strided")) count(points, "layout:strided");
    if (spec.has("broadcast")) count(points, "layout:broadcast");
    if (spec.has("axis0")) count(points, "layout:axis0");
    if (spec.has("ta") || spec.has("tb")) count(points, "layout:transposed");
    for (const char* values : {"special", "exact", "large", "offset", "repeated"})
      if (spec.has(values)) count(points, std::string("values:") + values);
    // Attributes: counted from the problem, whose attributes the variant sets.
    if (is_exhaustive_f32(spec)) continue;  // no host problem: its attributes are the defaults
    const Problem p = build_problem(spec, oracle);
    const polychip_op_attrs defaults = default_attrs(*p.op);
    for (const AttrSpec& a : p.op->attrs) {
      const bool changed = a.is_float ? p.attrs.floats[a.slot] != defaults.floats[a.slot]
                                      : p.attrs.ints[a.slot] != defaults.ints[a.slot];
      if (changed) count(points, attr_point(a));
    }
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

std::string coverage_table(const Coverage& coverage, const std::string& title) {
  std::string out =
      title + "\n" +
      fmt::format("{:<24} {:>7}  {:<28} {}\n", "op", "covered", "fewest cases", "holes");
  int total = 0, covered = 0;
  for (const auto& [op, points] : coverage) {
    int reached = 0;
    std::string holes, fewest;
    int fewest_n = 0;
    for (const auto& [point, n] : points) {
      if (n == 0) {
        holes += (holes.empty() ? "" : ", ") + point;
        continue;
      }
      ++reached;
      if (fewest.empty() || n < fewest_n) {
        fewest = point;
        fewest_n = n;
      }
    }
    total += static_cast<int>(points.size());
    covered += reached;
    out += fmt::format("{:<24} {:>3}/{:<3}  {:<28} {}\n", op, reached, points.size(),
                       fewest.empty() ? "-" : fmt::format("{} ({})", fewest, fewest_n),
                       holes.empty() ? "-" : holes);
  }
  out += fmt::format("{} of {} critical points covered across {} ops{}\n", covered, total,
                     coverage.size(), covered == total ? "" : ": holes above");
  return out;
}

}  // namespace polychip::precision
