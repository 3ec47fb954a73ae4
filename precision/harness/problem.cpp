#include "problem.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "exact_inputs.hpp"
#include "polychip/error.hpp"
#include "value_generator.hpp"

namespace polychip::precision {
namespace {

[[noreturn]] void bad_spec(const CaseSpec& spec, const std::string& why) {
  throw_error(StatusCode::kInvalidArgument, fmt::format("case '{}': {}", case_id(spec), why));
}

std::string_view family(const OpSpec& op) { return op.family; }

bool accepts_strides(const OpSpec& op) {
  return family(op) == "elementwise" || family(op) == "reduction";
}

// Number of problem dims each op takes; 0 = any rank (a tensor shape).
size_t dims_expected(const OpSpec& op, const CaseSpec& spec, std::string& layout) {
  std::string_view name = op.name, fam = op.family;
  if (name == "gemm") {
    layout = "MxNxK or BxMxNxK";
    return spec.dims.size() == 4 ? 4 : 3;
  }
  if (fam == "norm") return layout = "NxD", 2;
  if (fam == "loss") return layout = "NxC", 2;
  if (fam == "embedding") return layout = "NxVxD", 3;
  if (fam == "rotary") return layout = "SxHxD", 3;
  if (fam == "attention") return layout = "BxHxSxD", 4;
  if (fam == "optimizer") return layout = "N", 1;
  return 0;
}

DType output_cast_dtype(const CaseSpec& spec) {
  std::string to = spec.value_of("to");
  if (to.empty()) return spec.dtype == DType::kF32 ? DType::kBF16 : DType::kF32;
  try {
    return parse_dtype(to);
  } catch (const Error& e) {
    bad_spec(spec, e.message());
  }
}

// Shapes of every tensor of the op, in contract order.
std::vector<Shape> tensor_shapes(const Problem& p) {
  const OpSpec& op = *p.op;
  const Shape& d = p.spec.dims;
  std::string_view name = op.name, fam = op.family;
  if (name == "gemm") {
    bool batched = d.size() == 4;
    int64_t m = d[batched], n = d[batched + 1], k = d[batched + 2];
    Shape prefix = batched ? Shape{d[0]} : Shape{};
    auto with = [&](int64_t r, int64_t c) {
      Shape s = prefix;
      s.push_back(r);
      s.push_back(c);
      return s;
    };
    bool ta = p.attrs.ints[attr::kTransA], tb = p.attrs.ints[attr::kTransB];
    return {ta ? with(k, m) : with(m, k), tb ? with(n, k) : with(k, n), with(m, n), with(m, n)};
  }
  if (fam == "reduction") {
    Shape y = d;
    int64_t axis = p.attrs.ints[attr::kAxis];
    if (axis < 0) axis += static_cast<int64_t>(d.size());
    y[static_cast<size_t>(axis)] = 1;
    return {d, y};
  }
  if (fam == "elementwise" || fam == "softmax") return std::vector<Shape>(op.tensors.size(), d);
  if (fam == "norm") {
    int64_t n = d[0], dd = d[1];
    if (name == "layernorm") return {{n, dd}, {dd}, {dd}, {n, dd}, {n}, {n}};
    if (name == "layernorm_backward")
      return {{n, dd}, {n, dd}, {dd}, {n}, {n}, {n, dd}, {dd}, {dd}};
    if (name == "rmsnorm") return {{n, dd}, {dd}, {n, dd}, {n}};
    return {{n, dd}, {n, dd}, {dd}, {n}, {n, dd}, {dd}};  // rmsnorm_backward
  }
  if (fam == "loss") {
    int64_t n = d[0], c = d[1];
    if (name == "cross_entropy") return {{n, c}, {n}, {n}};
    return {{n, c}, {n}, {n}, {n, c}};
  }
  if (fam == "embedding") {
    int64_t n = d[0], v = d[1], dd = d[2];
    if (name == "embedding") return {{n}, {v, dd}, {n, dd}};
    return {{n}, {n, dd}, {v, dd}};
  }
  if (fam == "rotary") return {d, {d[0], d[2] / 2}, {d[0], d[2] / 2}, d};
  if (fam == "attention") {
    Shape lse = {d[0], d[1], d[2]};
    if (name == "attention") return {d, d, d, d, lse};
    return {d, d, d, d, d, lse, d, d, d};
  }
  return std::vector<Shape>(op.tensors.size(), d);  // adamw
}

int64_t reduce_length(const Problem& p) {
  const Shape& d = p.spec.dims;
  std::string_view name = p.op->name, fam = p.op->family;
  if (name == "gemm") return d.back();
  if (fam == "reduction" || fam == "softmax") {
    int64_t axis = p.attrs.ints[attr::kAxis];
    if (axis < 0) axis += static_cast<int64_t>(d.size());
    return d.empty() ? 1 : d[static_cast<size_t>(axis)];
  }
  if (name == "layernorm" || name == "rmsnorm") return d[1];
  if (fam == "norm") return std::max(d[0], d[1]);
  if (fam == "loss") return d[1];
  if (name == "embedding_backward") return d[0];
  if (fam == "attention") return d[2] + d[3];
  return 1;
}

void set_attrs(Problem& p) {
  const CaseSpec& s = p.spec;
  p.attrs = default_attrs(*p.op);
  std::string_view name = p.op->name, fam = p.op->family;
  if (name == "gemm") {
    p.attrs.ints[attr::kTransA] = s.has("ta");
    p.attrs.ints[attr::kTransB] = s.has("tb");
    p.attrs.ints[attr::kMathMode] = s.has("tf32") ? 1 : s.has("rpr") ? 2 : 0;
    p.attrs.floats[attr::kAlpha] = s.has("alpha") ? 0.5 : 1.0;
    p.attrs.floats[attr::kBeta] = s.has("beta") ? 0.75 : 0.0;
  }
  if (fam == "reduction" || fam == "softmax") p.attrs.ints[attr::kAxis] = s.has("axis0") ? 0 : -1;
  if (name == "gelu" || name == "gelu_backward")
    p.attrs.ints[attr::kGeluApproximate] = s.has("tanh") ? 1 : 0;
  if (fam == "attention") {
    p.attrs.floats[attr::kScale] =
        1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(1, s.dims[3])));
    p.attrs.ints[attr::kCausal] = s.has("noncausal") ? 0 : 1;
  }
  // A non-default eps: a kernel that ignores the attribute cannot pass.
  if ((name == "layernorm" || name == "rmsnorm") && s.has("eps")) p.attrs.floats[attr::kEps] = 0.5;
  if (name == "adamw") p.attrs.ints[attr::kStep] = 1 + static_cast<int64_t>(s.seed % 50);
  if (name == "adamw" && s.has("attrs")) {  // every hyperparameter off its default
    p.attrs.floats[attr::kLr] = 0.01;
    p.attrs.floats[attr::kBeta1] = 0.8;
    p.attrs.floats[attr::kBeta2] = 0.99;
    p.attrs.floats[attr::kAdamEps] = 1e-6;
    p.attrs.floats[attr::kWeightDecay] = 0.1;
    p.attrs.ints[attr::kStep] = 1000;
  }
  if (name == "rotary_embedding") p.attrs.ints[attr::kInverse] = s.has("inverse") ? 1 : 0;
  if (name == "fill") {
    std::mt19937_64 rng(s.seed ^ 0xF111ull);
    Distribution d = Distribution::kNormal;
    for (const auto& t : s.variant) parse_distribution(t, d);
    p.attrs.floats[attr::kFillValue] =
        d == Distribution::kSpecial
            ? special_values(DType::kF64)[s.seed % special_values(DType::kF64).size()]
            : 100 * generate_values(d, DType::kF64, 1, rng)[0];
  }
}

HostTensor make_tensor(DType dtype, Shape shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

// Runs the oracle for a helper op and returns its outputs rounded to their dtypes.
std::vector<HostTensor> run_oracle(HostOpFn oracle, const CaseSpec& spec, const char* op_name,
                                   std::vector<HostTensor> inputs, std::vector<HostTensor> outputs,
                                   const polychip_op_attrs& attrs) {
  if (!oracle) bad_spec(spec, fmt::format("deriving inputs needs the oracle's {}", op_name));
  oracle(*find_op(op_name), inputs, outputs, attrs);
  for (auto& t : outputs)
    for (auto& v : t.values) v = round_to_dtype(v, t.dtype);
  return outputs;
}

}  // namespace

std::vector<DType> problem_signature(const Problem& p) {
  std::vector<DType> sig;
  for (const auto& t : p.inputs) sig.push_back(t.dtype);
  for (const auto& t : p.outputs) sig.push_back(t.dtype);
  return sig;
}

std::string tensor_name(const Problem& p, size_t k) {
  return k < p.op->tensors.size() ? p.op->tensors[k].name : fmt::format("#{}", k);
}

std::string output_name(const Problem& p, size_t k) { return tensor_name(p, p.inputs.size() + k); }

namespace {

// layernorm's y = (x - mean) * rstd * gamma + beta: where the mean is far
// above the spread (the offset inputs), y is the difference of terms x *
// rstd * gamma and mean * rstd * gamma far larger than y, and an f32 mean's
// rounding (about u * |mean|) shows in y at that terms' scale; the
// variance, a sum of squared differences from the mean, carries relative
// errors of about u * |mean| * rstd into rstd. Per output (y, mean, rstd):
// the largest |mean * rstd * gamma|, none, and the largest |mean| * rstd^2
// over the rows, in double. About 0 on centred rows: no loosening there.
std::vector<double> layernorm_terms(const std::vector<HostTensor>& in, double eps) {
  const HostTensor &x = in[0], &gamma = in[1];
  const int64_t d = x.shape[1], n = x.shape[0];
  double largest_gamma = 0;
  for (double g : gamma.values) largest_gamma = std::max(largest_gamma, std::fabs(g));
  double y_terms = 0, rstd_terms = 0;
  for (int64_t i = 0; i < n && d > 0; ++i) {
    const double* row = x.values.data() + i * d;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < d; ++j) mean += row[j];
    mean /= static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j) var += (row[j] - mean) * (row[j] - mean);
    const double rstd = 1 / std::sqrt(var / static_cast<double>(d) + eps);
    y_terms = std::max(y_terms, std::fabs(mean) * rstd * largest_gamma);
    rstd_terms = std::max(rstd_terms, std::fabs(mean) * rstd * rstd);
  }
  auto finite = [](double v) { return std::isfinite(v) ? v : 0; };
  return {finite(y_terms), 0, finite(rstd_terms)};
}

// Special values in a row op: one in each line the op reduces (a seeded
// position, the dtype's special values in turn), the rest of the line
// normal. Each line then checks one value class (NaN and Inf propagate,
// zeros, subnormals and extremes do not poison the line); every third
// value special, as elementwise cases have them, would make every line NaN.
// Every case holds a NaN line.
void one_special_per_line(HostTensor& t, int64_t axis, std::mt19937_64& rng) {
  const Shape& s = t.shape;
  if (s.empty() || element_count(s) == 0) return;
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  int64_t outer = 1, inner = 1;
  const int64_t len = s[static_cast<size_t>(axis)];
  for (int64_t k = 0; k < axis; ++k) outer *= s[static_cast<size_t>(k)];
  for (size_t k = static_cast<size_t>(axis) + 1; k < s.size(); ++k) inner *= s[k];
  t.values = generate_values(Distribution::kNormal, t.dtype, element_count(s), rng);
  const std::vector<double> specials = special_values(t.dtype);
  const size_t first = static_cast<size_t>(rng() % specials.size());
  // Too few lines for the turn to reach NaN: the last line holds NaN instead,
  // so a kernel that drops NaN fails however few lines its case has (the
  // factors cross special values with 7 lines or more, op_factors.cpp).
  const size_t lines = static_cast<size_t>(outer * inner);
  const bool nan_reached = special_turn_reaches_nan(specials, first, lines);
  size_t line = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i, ++line) {
      const int64_t at = static_cast<int64_t>(rng() % static_cast<uint64_t>(len));
      t.values[static_cast<size_t>((o * len + at) * inner + i)] =
          !nan_reached && line + 1 == lines ? std::numeric_limits<double>::quiet_NaN()
                                            : specials[(first + line) % specials.size()];
    }
}

// The largest |dloss_n * softmax(x_n)_i| over finite rows.
double cross_entropy_gradient_scale(const HostTensor& logits, const HostTensor& dloss) {
  const int64_t rows = logits.shape[0], classes = logits.shape[1];
  double scale = 0;
  for (int64_t n = 0; n < rows; ++n) {
    const double* x = logits.values.data() + n * classes;
    const double top = *std::max_element(x, x + classes);
    double sum = 0;
    for (int64_t j = 0; j < classes; ++j) sum += std::exp(x[j] - top);
    const double g = std::fabs(dloss.values[static_cast<size_t>(n)]) / sum;
    if (std::isfinite(g)) scale = std::max(scale, g);
  }
  return scale;
}

}  // namespace

Problem build_problem(const CaseSpec& spec, HostOpFn oracle) {
  Problem p;
  p.spec = spec;
  p.op = find_op(spec.op);
  if (!p.op) bad_spec(spec, fmt::format("unknown op '{}'", spec.op));
  const OpSpec& op = *p.op;
  if (std::find(op.dtypes.begin(), op.dtypes.end(), spec.dtype) == op.dtypes.end())
    bad_spec(spec, fmt::format("{} does not take dtype {}", op.name, dtype_name(spec.dtype)));
  std::string layout;
  size_t want = dims_expected(op, spec, layout);
  if (want && spec.dims.size() != want)
    bad_spec(spec, fmt::format("{} takes dims {}", op.name, layout));
  if (!want && spec.dims.empty()) bad_spec(spec, "the shape needs at least one dimension");
  if (op.name == std::string_view("rotary_embedding") && spec.dims[2] % 2)
    bad_spec(spec, "rotary_embedding needs an even head dimension D");
  p.strided = spec.has("strided");
  if (p.strided && !accepts_strides(op))
    bad_spec(spec, fmt::format("{} ({}) takes only contiguous tensors", op.name, op.family));
  p.broadcast = spec.has("broadcast");
  if (p.broadcast && (op.tensors.size() != 3 || op.tensors[1].name != std::string_view("b") ||
                      spec.dims.size() < 2 || p.strided))
    bad_spec(spec, "broadcast needs a binary elementwise op (a, b) of rank >= 2, not strided");

  Distribution dist = Distribution::kNormal;
  std::string_view name = op.name;
  if (name == "log" || name == "sqrt" || name == "rsqrt") dist = Distribution::kPositive;
  for (const auto& t : spec.variant) parse_distribution(t, dist);

  set_attrs(p);
  p.reduce_len = reduce_length(p);
  const std::vector<Shape> shapes = tensor_shapes(p);
  const DType index_dtype = spec.has("i32") ? DType::kI32 : DType::kI64;

  for (size_t k = 0; k < op.tensors.size(); ++k) {
    const TensorSpec& ts = op.tensors[k];
    DType dt = spec.dtype;
    switch (ts.dtype_role) {
      case DTypeRole::kT:
        break;
      case DTypeRole::kF32:
        dt = DType::kF32;
        break;
      case DTypeRole::kIndex:
        dt = index_dtype;
        break;
      case DTypeRole::kAnyFloat:
        dt = ts.is_output ? output_cast_dtype(spec) : spec.dtype;
        break;
    }
    (ts.is_output ? p.outputs : p.inputs).push_back(make_tensor(dt, shapes[k]));
  }

  std::mt19937_64 rng(spec.seed * 0x9E3779B97F4A7C15ull + 0x5EEDull);
  const bool row_op =
      op.family == std::string_view("reduction") || op.family == std::string_view("softmax");
  auto fill = [&](HostTensor& t, Distribution d) {
    if (row_op && d == Distribution::kSpecial)
      one_special_per_line(t, p.attrs.ints[attr::kAxis], rng);
    else
      t.values = generate_values(d, t.dtype, element_count(t.shape), rng);
  };
  auto& in = p.inputs;
  const Shape& d = spec.dims;
  // Exact-integer attention and norms: inputs built for exact results.
  if (has_exact_inputs(p)) {
    fill_exact_inputs(p, rng);
    return p;
  }

  if (name == "gemm") {
    Distribution ab = dist == Distribution::kNormal || dist == Distribution::kUniform ||
                              dist == Distribution::kExact || dist == Distribution::kSpecial ||
                              dist == Distribution::kWide
                          ? dist
                          : Distribution::kNormal;
    fill(in[0], ab == Distribution::kSpecial ? Distribution::kNormal : ab);
    fill(in[1], ab == Distribution::kSpecial ? Distribution::kNormal : ab);
    // (An empty a or b has no row or column 0 to hold them.)
    if (ab == Distribution::kSpecial && !in[0].values.empty() && !in[1].values.empty()) {
      // Special values in row 0 of op(a) and column 0 of op(b) only: in
      // every row they would make every output NaN (a case that proves
      // nothing, Mistrusted).
      const int64_t m = d[d.size() - 3], n = d[d.size() - 2], k = d.back();
      const bool ta = p.attrs.ints[attr::kTransA] != 0, tb = p.attrs.ints[attr::kTransB] != 0;
      const auto sa = generate_values(ab, spec.dtype, k, rng),
                 sb = generate_values(ab, spec.dtype, k, rng);
      for (int64_t q = 0; q < k; ++q) {
        in[0].values[static_cast<size_t>(ta ? q * m : q)] = sa[static_cast<size_t>(q)];
        in[1].values[static_cast<size_t>(tb ? q : q * n)] = sb[static_cast<size_t>(q)];
      }
    }
    if (p.attrs.floats[attr::kBeta] != 0) {
      fill(in[2], dist == Distribution::kExact ? dist : Distribution::kNormal);
    } else {
      // beta == 0: c must not be read, so NaN in c must not reach y.
      in[2].values.assign(static_cast<size_t>(element_count(in[2].shape)),
                          std::numeric_limits<double>::quiet_NaN());
    }
  } else if (name == "softmax_backward" || name == "log_softmax_backward") {
    fill(in[0], Distribution::kNormal);
    HostTensor x = make_tensor(spec.dtype, in[1].shape);
    fill(x, dist);
    const char* fwd = name == "softmax_backward" ? "softmax" : "log_softmax";
    in[1] = run_oracle(oracle, spec, fwd, {x}, {make_tensor(spec.dtype, x.shape)}, p.attrs)[0];
  } else if (name == "layernorm_backward" || name == "rmsnorm_backward") {
    fill(in[0], Distribution::kNormal);
    fill(in[1], dist);
    fill(in[2], Distribution::kNormal);
    int64_t n = d[0], dd = d[1];
    polychip_op_attrs fwd_attrs = default_attrs(*find_op("layernorm"));
    if (name == "layernorm_backward") {
      HostTensor beta = make_tensor(spec.dtype, {dd});
      beta.values.assign(static_cast<size_t>(dd), 0.0);
      auto out = run_oracle(oracle, spec, "layernorm", {in[1], in[2], beta},
                            {make_tensor(spec.dtype, {n, dd}), make_tensor(DType::kF32, {n}),
                             make_tensor(DType::kF32, {n})},
                            fwd_attrs);
      in[3] = out[1];
      in[4] = out[2];
    } else {
      auto out =
          run_oracle(oracle, spec, "rmsnorm", {in[1], in[2]},
                     {make_tensor(spec.dtype, {n, dd}), make_tensor(DType::kF32, {n})}, fwd_attrs);
      in[3] = out[1];
    }
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma: the
    // terms are about rstd * |g| each, and dx their difference, tiny where
    // the variance is large against eps (every row when D = 2).
    const HostTensor& rstd = name == "layernorm_backward" ? in[4] : in[3];
    double terms = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < dd; ++j)
        terms = std::max(terms, std::fabs(rstd.values[static_cast<size_t>(i)] *
                                          in[0].values[static_cast<size_t>(i * dd + j)] *
                                          in[2].values[static_cast<size_t>(j)]));
    p.terms_magnitude = {terms};
  } else if (name == "cross_entropy" || name == "cross_entropy_backward") {
    fill(in[0], dist);
    in[1].values = generate_indices(d[0], d[1], rng);
    if (in.size() > 2) {
      fill(in[2], Distribution::kNormal);
      // dlogits = dloss * (softmax - onehot): a kernel's rounding error
      // scales with dloss * softmax, the largest of which is dloss / sum
      // exp(x - max) per row; the target's -dloss is an exact offset. (Where
      // the softmax saturates, the target's p - 1 cancels at |dloss|.)
      p.error_scale = {cross_entropy_gradient_scale(in[0], in[2])};
    }
  } else if (name == "embedding") {
    in[0].values = generate_indices(d[0], d[1], rng);
    fill(in[1], dist);
  } else if (name == "embedding_backward") {
    in[0].values = generate_indices(d[0], d[1], rng);
    if (spec.has("repeated"))  // the edge ids 0 and V-1, each many times
      for (size_t i = 0; i < in[0].values.size(); i += 2)
        in[0].values[i] = static_cast<double>(i % 4 ? d[1] - 1 : 0);
    fill(in[1], dist);
  } else if (name == "rotary_embedding") {
    fill(in[0], dist);
    int64_t s = d[0], half = d[2] / 2;
    in[1].values.resize(static_cast<size_t>(s * half));
    in[2].values.resize(static_cast<size_t>(s * half));
    for (int64_t i = 0; i < s; ++i)
      for (int64_t j = 0; j < half; ++j) {
        double theta = static_cast<double>(i) * std::pow(10000.0, -2.0 * j / d[2]);
        in[1].values[static_cast<size_t>(i * half + j)] =
            round_to_dtype(std::cos(theta), DType::kF32);
        in[2].values[static_cast<size_t>(i * half + j)] =
            round_to_dtype(std::sin(theta), DType::kF32);
      }
  } else if (name == "attention") {
    for (int k = 0; k < 3; ++k) fill(in[static_cast<size_t>(k)], dist);
  } else if (name == "attention_backward") {
    fill(in[0], Distribution::kNormal);
    for (int k = 1; k < 4; ++k) fill(in[static_cast<size_t>(k)], dist);
    auto out =
        run_oracle(oracle, spec, "attention", {in[1], in[2], in[3]},
                   {make_tensor(spec.dtype, d), make_tensor(DType::kF32, in[5].shape)}, p.attrs);
    in[4] = out[0];
    in[5] = out[1];
  } else if (name == "adamw") {
    fill(in[0], dist);
    fill(in[1], Distribution::kNormal);
    fill(in[2], Distribution::kNormal);
    for (auto& v : in[2].values) v = round_to_dtype(0.1 * v, DType::kF32);
    fill(in[3], Distribution::kNormal);
    for (auto& v : in[3].values) v = round_to_dtype(0.01 * v * v, DType::kF32);
  } else {
    // Elementwise, cast, copy, reductions, softmax, layernorm, rmsnorm:
    // the first input follows the case's distribution, the rest are normal
    // (binary ops: both operands follow it).
    const bool dy_first = op.tensors[0].name == std::string_view("dy");
    // An elementwise gradient's special values sit one place after x's, beside
    // a normal x: a NaN or Inf in dy must reach dx wherever the derivative
    // passes it (relu_backward at x > 0), which special beside special would
    // not show. Other gradients are drawn normal.
    const bool special_dy =
        dy_first && dist == Distribution::kSpecial && op.family == std::string_view("elementwise");
    for (size_t k = 0; k < in.size(); ++k) {
      const bool follows =
          k == 0 ? !dy_first || special_dy
                 : op.tensors[0].name == std::string_view("a") || (dy_first && k == 1);
      fill(in[k], follows ? dist : Distribution::kNormal);
    }
    if (special_dy && !in[0].values.empty())
      std::rotate(in[0].values.rbegin(), in[0].values.rbegin() + 1, in[0].values.rend());
    if (p.broadcast) {  // every row of b is its row 0
      auto& b = in[1].values;
      // (Not element_count / shape[0]: an empty dimension 0 would divide by zero.)
      const size_t row =
          static_cast<size_t>(element_count(Shape(in[1].shape.begin() + 1, in[1].shape.end())));
      // Special values: the row is drawn as a tensor of its own, so the rule
      // that puts NaN in a short tensor applies to what b holds; a row of one
      // element takes the cycle's first value instead (NaN there would make
      // every output NaN, hiding how b is read).
      if (dist == Distribution::kSpecial && row > 0) {
        const std::vector<double> own =
            row == 1 ? std::vector<double>{special_values(in[1].dtype).front()}
                     : generate_values(dist, in[1].dtype, static_cast<int64_t>(row), rng);
        std::copy(own.begin(), own.end(), b.begin());
      }
      for (size_t i = row; i < b.size(); ++i) b[i] = b[i % row];
    }
    if ((name == "log" || name == "sqrt" || name == "rsqrt") && dist == Distribution::kWide)
      for (auto& v : in[0].values) v = std::fabs(v);  // their domain; special keeps negatives
    if (name == "exp" && dist == Distribution::kWide) {
      // exp's interesting range: from results below the smallest subnormal
      // to results beyond the largest finite value.
      const FloatFormat f = float_format(spec.dtype);
      const double lo = std::log(f.min_subnormal()) * 1.02, hi = std::log(f.max_finite) * 1.02;
      std::uniform_real_distribution<double> u(lo, hi);
      for (auto& v : in[0].values) v = round_to_dtype(u(rng), spec.dtype);
    }
  }
  if (name == "layernorm") p.terms_magnitude = layernorm_terms(in, p.attrs.floats[attr::kEps]);
  return p;
}

}  // namespace polychip::precision
