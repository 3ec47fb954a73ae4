#include "exact_inputs.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <string_view>

#include <fmt/format.h>

#include "polychip/error.hpp"
#include "value_generator.hpp"

namespace polychip::precision {
namespace {

// Scores at or below this make exp() exactly 0 even in long double (whose
// smallest subnormal is about e^-11,400).
constexpr double kVanishingScore = 12000;

std::vector<double> small_integers(int64_t n, DType dtype, std::mt19937_64& rng) {
  return generate_values(Distribution::kExact, dtype, n, rng);
}

// Bits of a key code: enough for S distinct codes.
int code_bits(int64_t s) {
  int bits = 1;
  while ((int64_t{1} << bits) < s) ++bits;
  return bits;
}

void fill_attention(Problem& p, std::mt19937_64& rng) {
  const Shape& d = p.spec.dims;  // B x H x S x D
  const int64_t heads = d[0] * d[1], s = d[2], dim = d[3];
  const bool causal = !p.spec.has("noncausal");
  const int bits = code_bits(s);
  // Key j's code c(j) (a permutation of 0..S-1) is written into 2L dims as
  // (bit, 1 - bit) pairs, repeated r times; query i carries its target's
  // code as +-big. Then q_i . k_j = r big (L - 2 hamming(c(t), c(j))): the
  // target scores r big L, every other key at least 2 r big less.
  const int64_t repeats = dim / (2 * bits);
  if (s < 2 || repeats < 1)
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("case '{}': exact attention needs S >= 2 and a head dimension D >= {} "
                            "(2 ceil(log2 S))",
                            case_id(p.spec), 2 * bits));
  // scale * 2 r big >= kVanishingScore, scale = 1/sqrt(D); big a power of
  // two (<= 16,384 for the quick shapes: twice that is still an f16).
  const double big = std::exp2(std::ceil(
      std::log2(kVanishingScore * std::sqrt(static_cast<double>(dim)) / (2.0 * repeats))));
  // q holds ±big and ±2 big: past the dtype's largest value they would
  // become Inf (f16 with a D small for its S).
  const DType dtype = p.inputs[0].dtype;
  if (2 * big > float_format(dtype).max_finite)
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("case '{}': exact attention needs q values of {} (2 big), past the "
                            "largest {}: take a larger head dimension D",
                            case_id(p.spec), 2 * big, dtype_name(dtype)));
  auto& q = p.inputs[0].values;
  auto& k = p.inputs[1].values;
  q.assign(static_cast<size_t>(heads * s * dim), 0.0);
  k.assign(q.size(), 0.0);
  std::vector<int64_t> code(static_cast<size_t>(s));
  for (int64_t h = 0; h < heads; ++h) {
    std::iota(code.begin(), code.end(), 0);
    std::shuffle(code.begin(), code.end(), rng);
    for (int64_t i = 0; i < s; ++i) {
      // The key query i attends to: any key, or one it may see when causal.
      const int64_t target = std::uniform_int_distribution<int64_t>(0, causal ? i : s - 1)(rng);
      // 1 or 2: lse (the target's score) takes two values, so it is not
      // Mistrusted as a constant.
      const double weight = static_cast<double>(1 + (rng() & 1));
      const size_t row = static_cast<size_t>((h * s + i) * dim);
      for (int64_t r = 0; r < repeats; ++r)
        for (int b = 0; b < bits; ++b) {
          const size_t at = row + static_cast<size_t>(2 * (r * bits + b));
          const int key_bit = static_cast<int>(code[static_cast<size_t>(i)] >> b & 1);
          const int query_bit = static_cast<int>(code[static_cast<size_t>(target)] >> b & 1);
          k[at] = key_bit;
          k[at + 1] = 1 - key_bit;
          q[at] = (2 * query_bit - 1) * big * weight;
          q[at + 1] = -q[at];
        }
    }
  }
  p.inputs[2].values = small_integers(heads * s * dim, p.inputs[2].dtype, rng);
}

void fill_norm(Problem& p, std::mt19937_64& rng) {
  const bool layernorm = p.op->name == std::string_view("layernorm");
  const int64_t n = p.spec.dims[0], dim = p.spec.dims[1];
  if (layernorm && dim % 2)
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("case '{}': exact layernorm needs an even row length D (half +d, "
                            "half -d)",
                            case_id(p.spec)));
  // Far below half an ulp of the smallest variance (1/4) in every dtype and
  // in long double: var + eps rounds to var. Not the default, so an ignored
  // eps (1e-5) shows.
  p.attrs.floats[attr::kEps] = 0x1p-100;
  const DType dt = p.inputs[0].dtype;
  const std::vector<double> means = small_integers(n, dt, rng);
  std::uniform_int_distribution<int> exponent(-1, 2), sign(0, 1);
  std::vector<double> signs(static_cast<size_t>(dim));
  auto& x = p.inputs[0].values;
  x.clear();
  for (int64_t r = 0; r < n; ++r) {
    const double spread = std::exp2(exponent(rng));  // 1/2, 1, 2 or 4
    for (int64_t c = 0; c < dim; ++c)
      signs[static_cast<size_t>(c)] = layernorm ? (c < dim / 2 ? 1 : -1) : (sign(rng) ? 1 : -1);
    if (layernorm) std::shuffle(signs.begin(), signs.end(), rng);
    for (double sg : signs)
      x.push_back((layernorm ? means[static_cast<size_t>(r)] : 0) + sg * spread);
  }
  for (size_t t = 1; t < p.inputs.size(); ++t)  // gamma (and beta)
    p.inputs[t].values = small_integers(dim, p.inputs[t].dtype, rng);
}

}  // namespace

bool has_exact_inputs(const Problem& p) {
  const std::string_view name = p.op->name;
  return p.spec.has("exact") && (name == "attention" || name == "layernorm" || name == "rmsnorm");
}

void fill_exact_inputs(Problem& p, std::mt19937_64& rng) {
  if (p.op->name == std::string_view("attention"))
    fill_attention(p, rng);
  else
    fill_norm(p, rng);
}

std::optional<Tolerance> exact_case_tolerance(const Problem& p, size_t k) {
  const std::string_view op = p.op->name;
  if (op == "layernorm" && k == 1) {
    // A Welford mean's rounding error grows like sqrt(D) u max|x| (Higham's
    // rule of thumb for recursive updates): up to 0.8 of it measured for one
    // thread folding a whole row (tools/welford_mean_error.py), so twice it
    // is allowed; PyTorch's 256-thread tree stays near 0.
    double largest = 0;
    for (double x : p.inputs[0].values) largest = std::max(largest, std::fabs(x));
    const double unit_roundoff =
        std::ldexp(1.0, -(float_format(p.outputs[k].dtype).mantissa_bits + 1));
    Tolerance t;
    t.mode = ToleranceMode::kClose;
    t.atol = 2 * std::sqrt(static_cast<double>(p.spec.dims[1])) * unit_roundoff * largest;
    t.source = "exact-integer layernorm mean: Welford's running divisions, 2 sqrt(D) u max|x|";
    return t;
  }
  if (op == "attention" && k == 1) {
    // lse = the target's score, r big L / sqrt(D): exact when sqrt(D) is a
    // power of two (D = 4, 16, 64, 256, ...).
    const auto dim = static_cast<uint64_t>(p.spec.dims[3]);
    if (!std::has_single_bit(dim) || std::countr_zero(dim) % 2 != 0) return std::nullopt;
  }
  Tolerance t;
  t.mode = ToleranceMode::kExact;
  t.source = "exact-integer case: tolerance 0";
  return t;
}

}  // namespace polychip::precision
