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

[[noreturn]] void bad_exact(const Problem& p, std::string_view why) {
  throw_error(StatusCode::kInvalidArgument,
              fmt::format("case '{}': exact {} needs {}", case_id(p.spec), p.op->name, why));
}

std::vector<double> small_integers(int64_t n, DType dtype, std::mt19937_64& rng) {
  return generate_values(Distribution::kExact, dtype, n, rng);
}

void fill_attention(Problem& p, std::mt19937_64& rng) {
  const Shape& d = p.spec.dims;  // B x H x S x D
  const int64_t heads = d[0] * d[1], s = d[2], dim = d[3];
  if (!p.spec.has("noncausal"))
    bad_exact(p, "noncausal (a causal row's visible keys are not a power of two)");
  if (s < 4 || !std::has_single_bit(static_cast<uint64_t>(s)))
    bad_exact(p, "a sequence length S that is a power of two >= 4");
  if (dim < 2 || dim % 2) bad_exact(p, "an even head dimension D");
  // score = scale * (D/2) * big * (number of selecting bits set in q and
  // k), scale = 1/sqrt(D): big, a power of two, makes any non-zero score
  // vanish. (<= 32,768 for D >= 2: representable in f16.)
  const double big = std::exp2(
      std::ceil(std::log2(kVanishingScore * std::sqrt(static_cast<double>(dim)) / (dim / 2.0))));
  auto& q = p.inputs[0].values;
  auto& k = p.inputs[1].values;
  q.assign(static_cast<size_t>(heads * s * dim), 0.0);
  k.assign(q.size(), 0.0);
  std::uniform_int_distribution<int> bit(0, 1);
  std::vector<int64_t> key_code(static_cast<size_t>(s));
  for (int64_t h = 0; h < heads; ++h) {
    // Key j carries the two bits of code(j), a permutation of 0..S-1: S/2
    // keys have each bit clear, S/4 both. Query i selects with its bits
    // (a, b) the keys whose selected bits are clear: S, S/2 or S/4 keys.
    std::iota(key_code.begin(), key_code.end(), 0);
    std::shuffle(key_code.begin(), key_code.end(), rng);
    for (int64_t i = 0; i < s; ++i) {
      const int a = bit(rng), b = bit(rng);
      const size_t row = static_cast<size_t>((h * s + i) * dim);
      for (int64_t c = 0; c < dim; ++c) {
        const bool first_half = c < dim / 2;
        q[row + static_cast<size_t>(c)] = (first_half ? a : b) * big;
        const int64_t key_bit = first_half ? key_code[static_cast<size_t>(i)] & 1
                                           : key_code[static_cast<size_t>(i)] >> 1 & 1;
        k[row + static_cast<size_t>(c)] = -static_cast<double>(key_bit);
      }
    }
  }
  p.inputs[2].values = small_integers(heads * s * dim, p.inputs[2].dtype, rng);
}

void fill_norm(Problem& p, std::mt19937_64& rng) {
  const bool layernorm = p.op->name == std::string_view("layernorm");
  const int64_t n = p.spec.dims[0], dim = p.spec.dims[1];
  if (layernorm && dim % 2) bad_exact(p, "an even row length D (half +d, half -d)");
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

bool is_exact_output(const Problem& p, size_t k) {
  return !(p.op->name == std::string_view("attention") && k == 1);
}

}  // namespace polychip::precision
