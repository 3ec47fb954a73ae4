#include "op_factors.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::precision {
namespace {

// Every floating compute dtype the contract lets the op take.
Factor dtypes_of(std::string_view op) {
  Factor f{"dtype", {}};
  for (DType dt : find_op(op)->dtypes)
    if (is_floating(dt)) f.values.push_back({std::string(dtype_name(dt)), dt, 0, 0, {}, {}});
  return f;
}

// Loop lengths of one dimension (counted from the end).
Factor sizes(std::string name, int dim, std::initializer_list<int64_t> values) {
  Factor f{std::move(name), {}};
  for (int64_t v : values) f.values.push_back({std::to_string(v), {}, dim, v, {}, {}});
  return f;
}

// A choice of variant tokens; the first value is the default (no token).
Factor options(std::string name, std::initializer_list<const char*> labels) {
  Factor f{std::move(name), {}};
  bool first = true;
  for (const char* label : labels) {
    FactorValue v{label, {}, 0, 0, {}, {}};
    if (!first) v.tokens = {label};
    f.values.push_back(std::move(v));
    first = false;
  }
  return f;
}

// The rank: dims prepended to the op's base shape.
Factor ranks(std::initializer_list<std::pair<const char*, Shape>> values) {
  Factor f{"rank", {}};
  for (const auto& [label, leading] : values) f.values.push_back({label, {}, 0, 0, leading, {}});
  return f;
}

// Elementwise loops: tails past vector widths, a 256 block, a 4,096 tile,
// the 16-bit boundary.
Factor elementwise_lengths() { return sizes("N", -1, {1, 31, 257, 4097, 65537}); }
Factor row_lengths() { return sizes("row", -1, {1, 33, 257, 4097, 50257}); }
Factor row_counts() { return sizes("rows", -2, {1, 7, 129}); }
// A line of one element reduces to itself (softmax 1, argmax 0): the case
// proves nothing. Many long rows cost more than they add.
const std::vector<ForbiddenPair> kRowOpPairs{
    {"row", "1", "axis", "last", "a reduction over one element proves nothing"},
    {"rows", "1", "axis", "axis0", "a reduction over one element proves nothing"},
    {"rows", "129", "row", "4097", "0.5M elements: 7 rows of 4,097 reach the length"},
    {"rows", "129", "row", "50257", "6.5M elements: 7 rows of 50,257 reach the length"}};
const ForbiddenPair kLargeAndRank{"rank", "3d", "N", "65537",
                                  "0.4M elements: 1-D cases cross the 16-bit boundary"};

std::vector<OpFactors> build_registry() {
  std::vector<OpFactors> r;
  const Factor layout{options("layout", {"contiguous", "strided"})};
  for (const char* op :
       {"neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "silu",
        "relu_backward", "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward"}) {
    OpFactors e{op,
                {1000},
                {dtypes_of(op), elementwise_lengths(), ranks({{"1d", {}}, {"3d", {2, 3}}}), layout,
                 options("values", {"normal", "special", "wide"})},
                {kLargeAndRank}};
    if (std::string_view(op).starts_with("gelu"))
      e.factors.push_back(options("approximate", {"erf", "tanh"}));
    r.push_back(std::move(e));
  }
  for (const char* op : {"add", "sub", "mul", "div"})
    r.push_back(
        {op,
         {1000},
         {dtypes_of(op), elementwise_lengths(), ranks({{"1d", {}}, {"2d", {3}}, {"3d", {2, 3}}}),
          options("layout", {"contiguous", "strided", "broadcast"}),
          options("values", {"normal", "special", "wide"})},
         {{"rank", "1d", "layout", "broadcast", "b broadcast along dimension 0 needs rank >= 2"},
          {"rank", "3d", "N", "65537", kLargeAndRank.reason}}});
  {
    Factor to{"to", {}};
    for (const char* d : {"f32", "f16", "bf16", "f64", "f8e4m3", "f8e5m2"})
      to.values.push_back({d, {}, 0, 0, {}, {std::string("to=") + d}});
    r.push_back({"cast",
                 {1000},
                 {dtypes_of("cast"), to, elementwise_lengths(), layout,
                  options("values", {"normal", "special", "wide"})},
                 {}});
  }
  r.push_back({"fill",
               {1000},
               {dtypes_of("fill"), elementwise_lengths(), ranks({{"1d", {}}, {"3d", {2, 3}}}),
                options("values", {"normal", "special"})},
               {kLargeAndRank}});
  r.push_back(
      {"copy",
       {1000},
       {dtypes_of("copy"), elementwise_lengths(), ranks({{"1d", {}}, {"3d", {2, 3}}}), layout},
       {kLargeAndRank}});
  // One line with one special value checks that value alone: NaN or Inf
  // makes the one output special (whatever the precision it was computed
  // in), a saturating one makes a softmax one-hot and every gradient 0.
  // Lines of special values are crossed in the cases of 7 and 129 lines.
  std::vector<ForbiddenPair> special_row_pairs = kRowOpPairs;
  for (const char* one_line : {"rows", "row"})
    special_row_pairs.push_back(
        {one_line, "1", "values", "special",
         "one line holding a special value: its one output checks that value alone"});
  for (const char* op : {"reduce_sum", "reduce_mean", "reduce_max", "argmax", "l2_norm"}) {
    const std::string_view name = op;
    OpFactors e{
        op,
        {8, 256},
        {dtypes_of(op), row_counts(), row_lengths(), options("axis", {"last", "axis0"}), layout,
         name == "reduce_sum" || name == "argmax"
             ? options("values", {"normal", "special", "large", "exact"})
             : options("values", {"normal", "special", "large"})},
        special_row_pairs};
    if (name == "argmax") e.factors.push_back(options("index", {"i64", "i32"}));
    r.push_back(std::move(e));
  }
  for (const char* op : {"softmax", "log_softmax", "softmax_backward", "log_softmax_backward"}) {
    OpFactors e{op,
                {8, 256},
                {dtypes_of(op), row_counts(), row_lengths(), options("axis", {"last", "axis0"}),
                 // (Backward of large logits: a saturated softmax, dx almost all 0.)
                 std::string_view(op).ends_with("backward")
                     ? options("values", {"normal", "special"})
                     : options("values", {"normal", "large", "special"})},
                special_row_pairs};
    if (std::string_view(op) == "softmax")
      e.forbidden.push_back({"dtype", "f64", "values", "large",
                             "f64 logits at scale 400 (past exp's overflow) make ~99% of the "
                             "softmax exactly 0: the case proves nothing"});
    r.push_back(std::move(e));
  }
  for (const char* op : {"layernorm", "rmsnorm", "layernorm_backward", "rmsnorm_backward"}) {
    OpFactors e{
        op,
        {16, 256},
        // (D = 1: a row is its own mean, every output beta: proves nothing.)
        {dtypes_of(op), sizes("N", -2, {1, 7, 64}), sizes("D", -1, {2, 33, 256, 1023, 4097, 8192}),
         options("values", {"normal", "offset"})},
        {{"N", "64", "D", "8192", "0.5M elements: 7 rows of 8,192 reach the length"}}};
    if (!std::string_view(op).ends_with("backward"))
      e.factors.push_back(options("eps", {"1e-5", "eps"}));
    r.push_back(std::move(e));
  }
  for (const char* op : {"cross_entropy", "cross_entropy_backward"}) {
    OpFactors e{op,
                {16, 512},
                {dtypes_of(op), sizes("N", -2, {1, 16, 64}), sizes("C", -1, {2, 33, 1023, 50257}),
                 options("index", {"i64", "i32"}), options("values", {"normal", "large"})},
                {{"N", "64", "C", "50257", "3.2M logits: 16 rows of 50,257 reach the length"}}};
    if (std::string_view(op).ends_with("backward"))
      e.forbidden.push_back({"dtype", "f64", "values", "large",
                             "f64 logits at scale 400 (past exp's overflow) leave ~90% of the "
                             "gradient exactly 0: the case proves nothing"});
    r.push_back(std::move(e));
  }
  r.push_back(
      {"gemm",
       {33, 17, 129},
       {dtypes_of("gemm"), sizes("M", -3, {1, 17, 64}), sizes("N", -2, {1, 33, 64}),
        sizes("K", -1, {1, 127, 1024, 4097}), ranks({{"single", {}}, {"batched", {3}}}),
        options("trans_a", {"no", "ta"}), options("trans_b", {"no", "tb"}),
        options("alpha", {"1", "alpha"}), options("beta", {"0", "beta"}),
        options("math_mode", {"strict", "tf32", "rpr"}), options("values", {"normal", "special"})},
       {{"M", "1", "values", "special",
         "special values sit in row 0 of op(a): with M = 1 every output is NaN"},
        {"N", "1", "values", "special",
         "special values in op(b)'s one column: with N = 1 every output is NaN"},
        {"M", "64", "K", "4097", "a 64-row product of depth 4,097 costs more than it adds"},
        {"dtype", "f64", "math_mode", "tf32", "TF32 is an f32 mode"},
        {"dtype", "f16", "math_mode", "tf32", "TF32 is an f32 mode"},
        {"dtype", "bf16", "math_mode", "tf32", "TF32 is an f32 mode"},
        {"dtype", "f64", "math_mode", "rpr", "reduced-precision reduction is an f16/bf16 mode"},
        {"dtype", "f32", "math_mode", "rpr", "reduced-precision reduction is an f16/bf16 mode"}}});
  r.push_back(
      {"embedding",
       {64, 100, 32},
       {dtypes_of("embedding"), sizes("N", -3, {1, 64, 1000}), sizes("V", -2, {2, 100, 50257}),
        sizes("D", -1, {1, 31, 4097}), options("index", {"i64", "i32"})},
       {{"V", "50257", "D", "4097", "a 206M-element table: beyond a level's memory"},
        {"N", "1000", "D", "4097", "4M outputs: 64 rows of 4,097 reach the width"}}});
  // The gradient of a table far larger than the ids is almost all zero (a
  // case that proves nothing): the tables stay within reach of the ids.
  r.push_back({"embedding_backward",
               {64, 100, 32},
               {dtypes_of("embedding_backward"), sizes("N", -3, {100, 1000}),
                sizes("V", -2, {2, 100, 1000}), sizes("D", -1, {1, 31, 4097}),
                options("index", {"i64", "i32"}), options("ids", {"uniform", "repeated"})},
               {{"N", "100", "V", "1000", "100 ids leave 90% of 1,000 rows zero"},
                {"N", "1000", "D", "4097", "4M gradients: 100 ids of 4,097 reach the width"}}});
  r.push_back(
      {"rotary_embedding",
       {16, 4, 64},
       {dtypes_of("rotary_embedding"), sizes("S", -3, {1, 17, 128}), sizes("H", -2, {1, 3}),
        sizes("D", -1, {2, 64, 130, 4096}), options("inverse", {"no", "inverse"})},
       {{"S", "128", "D", "4096", "1.5M elements: 17 positions of 4,096 reach the width"}}});
  // (The gradient of one key is zero: the backward pass starts at 2.)
  for (const char* op : {"attention", "attention_backward"})
    r.push_back({op,
                 {1, 2, 64, 32},
                 {dtypes_of(op), sizes("B", -4, {1, 2}), sizes("H", -3, {1, 3}),
                  std::string_view(op) == "attention" ? sizes("S", -2, {1, 33, 129})
                                                      : sizes("S", -2, {2, 33, 129}),
                  sizes("D", -1, {16, 80, 128}), options("mask", {"causal", "noncausal"})},
                 {}});
  r.push_back({"adamw",
               {1000},
               {dtypes_of("adamw"), sizes("N", -1, {1, 127, 4097, 65537}),
                options("hyperparameters", {"defaults", "attrs"})},
               {}});
  // The contract's order, so a listing reads like docs/op-contract.md.
  std::vector<OpFactors> ordered;
  for (const OpSpec& spec : op_contract())
    for (OpFactors& e : r)
      if (e.op == spec.name) ordered.push_back(std::move(e));
  return ordered;
}

size_t value_index(const OpFactors& op, const std::string& factor, const std::string& label,
                   size_t& factor_index) {
  for (size_t f = 0; f < op.factors.size(); ++f) {
    if (op.factors[f].name != factor) continue;
    factor_index = f;
    for (size_t v = 0; v < op.factors[f].values.size(); ++v)
      if (op.factors[f].values[v].label == label) return v;
  }
  throw_error(StatusCode::kInternal,
              fmt::format("op factors of {}: no value {}={}", op.op, factor, label));
}

bool holds(const Factor& factor, const FactorValue& value, const CaseSpec& spec,
           const Shape& base) {
  if (value.dtype) return spec.dtype == *value.dtype;
  if (value.leading) return spec.dims.size() == base.size() + value.leading->size();
  if (value.dim < 0) {
    const auto rank = static_cast<int>(spec.dims.size());
    return rank + value.dim >= 0 && spec.dims[static_cast<size_t>(rank + value.dim)] == value.size;
  }
  if (!value.tokens.empty())
    return std::all_of(value.tokens.begin(), value.tokens.end(),
                       [&](const std::string& t) { return spec.has(t); });
  // The default: none of the factor's other tokens.
  for (const FactorValue& other : factor.values)
    for (const std::string& t : other.tokens)
      if (spec.has(t)) return false;
  return true;
}

}  // namespace

const std::vector<OpFactors>& op_factor_registry() {
  static const std::vector<OpFactors> registry = build_registry();
  return registry;
}

const OpFactors* find_op_factors(std::string_view op) {
  for (const OpFactors& e : op_factor_registry())
    if (e.op == op) return &e;
  return nullptr;
}

std::vector<size_t> value_counts(const OpFactors& op) {
  std::vector<size_t> counts;
  for (const Factor& f : op.factors) counts.push_back(f.values.size());
  return counts;
}

std::string forbidden_reason(const OpFactors& op, size_t fa, size_t va, size_t fb, size_t vb) {
  for (const ForbiddenPair& p : op.forbidden) {
    size_t f1 = 0, f2 = 0;
    const size_t v1 = value_index(op, p.factor_a, p.value_a, f1);
    const size_t v2 = value_index(op, p.factor_b, p.value_b, f2);
    if ((f1 == fa && v1 == va && f2 == fb && v2 == vb) ||
        (f1 == fb && v1 == vb && f2 == fa && v2 == va))
      return p.reason;
  }
  return "";
}

PairAllowed allowed_pairs(const OpFactors& op) {
  return [&op](size_t fa, size_t va, size_t fb, size_t vb) {
    return forbidden_reason(op, fa, va, fb, vb).empty();
  };
}

CaseSpec case_of_row(const OpFactors& op, const FactorRow& row, uint64_t seed) {
  CaseSpec spec{op.op, DType::kF32, op.base_dims, {}, seed};
  for (size_t f = 0; f < op.factors.size(); ++f) {  // the rank first: dims count from the end
    const FactorValue& v = op.factors[f].values.at(row.at(f));
    if (v.leading) spec.dims.insert(spec.dims.begin(), v.leading->begin(), v.leading->end());
  }
  for (size_t f = 0; f < op.factors.size(); ++f) {
    const FactorValue& v = op.factors[f].values.at(row.at(f));
    if (v.dtype) spec.dtype = *v.dtype;
    if (v.dim < 0)
      spec.dims[static_cast<size_t>(static_cast<int>(spec.dims.size()) + v.dim)] = v.size;
    for (const std::string& t : v.tokens) spec.variant.push_back(t);
  }
  return spec;
}

FactorRow classify_case(const OpFactors& op, const CaseSpec& spec) {
  FactorRow row(op.factors.size(), kUnknown);
  for (size_t f = 0; f < op.factors.size(); ++f)
    for (size_t v = 0; v < op.factors[f].values.size() && row[f] == kUnknown; ++v)
      if (holds(op.factors[f], op.factors[f].values[v], spec, op.base_dims)) row[f] = v;
  return row;
}

std::string describe_tuple(const OpFactors& op, const FactorTuple& tuple) {
  std::string out;
  for (const auto& [f, v] : tuple)
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", op.factors[f].name,
                       op.factors[f].values[v].label);
  return out;
}

}  // namespace polychip::precision
