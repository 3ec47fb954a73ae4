#include "value_generator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip::precision {
namespace {

struct Named {
  Distribution d;
  std::string_view name;
};
constexpr Named kNames[] = {
    {Distribution::kNormal, "normal"},        {Distribution::kUniform, "uniform"},
    {Distribution::kPositive, "positive"},    {Distribution::kWide, "wide"},
    {Distribution::kSpecial, "special"},      {Distribution::kOffset, "offset"},
    {Distribution::kLarge, "large"},          {Distribution::kExact, "exact"},
    {Distribution::kExhaustive, "exhaustive"}};

// Offsets chosen so E[x^2] - E[x]^2 loses every significant bit of the
// variance in the dtype's accumulation precision, while a two-pass mean and
// variance stays accurate.
// (1e4 for f64: any f64 implementation loses ~u * offset in x - mean, so a
// larger offset would fail correct two-pass kernels too.)
double offset_for(DType dtype) { return dtype == DType::kF64 ? 1e4 : 1e3; }
// exp(x) overflows the dtype for |x| beyond ln(max): the scale puts most
// rows past it, so a softmax without max subtraction overflows.
double large_scale_for(DType dtype) {
  // f16/bf16 kernels usually compute in f32, so the scale must overflow f32.
  return dtype == DType::kF64 ? 400 : 50;
}

}  // namespace

bool parse_distribution(std::string_view token, Distribution& out) {
  for (const auto& n : kNames)
    if (n.name == token) {
      out = n.d;
      return true;
    }
  return false;
}

std::string_view distribution_name(Distribution d) {
  for (const auto& n : kNames)
    if (n.d == d) return n.name;
  return "?";
}

double FloatFormat::min_normal() const { return std::ldexp(1.0, min_normal_exp); }
double FloatFormat::min_subnormal() const {
  return std::ldexp(1.0, min_normal_exp - mantissa_bits);
}

FloatFormat float_format(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return {52, -1022, 1023, std::numeric_limits<double>::max()};
    case DType::kF32:
      return {23, -126, 127, std::numeric_limits<float>::max()};
    case DType::kF16:
      return {10, -14, 15, 65504.0};
    case DType::kBF16:
      return {7, -126, 127, 0x1.FEp127};
    case DType::kF8E4M3:
      return {3, -6, 8, 448.0};
    case DType::kF8E5M2:
      return {2, -14, 15, 57344.0};
    default:
      throw_error(StatusCode::kInvalidArgument,
                  fmt::format("dtype {} is not a floating dtype", dtype_name(dtype)));
  }
}

std::vector<double> special_values(DType dtype) {
  const FloatFormat f = float_format(dtype);
  const double inf = std::numeric_limits<double>::infinity();
  const double sub = f.min_subnormal(), norm = f.min_normal();
  std::vector<double> v = {0.0,           -0.0, sub,   -sub,
                           norm - sub,    norm, -norm, f.max_finite,
                           -f.max_finite, inf,  -inf,  std::numeric_limits<double>::quiet_NaN(),
                           1.0,           -1.0, 0.5};
  for (auto& x : v) x = round_to_dtype(x, dtype);
  return v;
}

bool special_turn_reaches_nan(const std::vector<double>& specials, size_t first, size_t count) {
  const auto nan =
      std::find_if(specials.begin(), specials.end(), [](double x) { return std::isnan(x); });
  if (nan == specials.end()) return true;  // nothing to reach
  const auto nan_at = static_cast<size_t>(nan - specials.begin());
  return (nan_at + specials.size() - first % specials.size()) % specials.size() < count;
}

std::vector<double> generate_values(Distribution d, DType dtype, int64_t n, std::mt19937_64& rng) {
  const FloatFormat f = float_format(dtype);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::vector<double> specials =
      d == Distribution::kSpecial ? special_values(dtype) : std::vector<double>{};
  // A tensor too short for the cycle of specials to reach NaN (every third
  // value) ends its specials with NaN instead, so a kernel that drops NaN
  // fails however short its case is.
  const int64_t last_special = n > 0 ? (n - 1) / 3 : 0;  // the last special's place in the cycle
  const bool nan_reached =
      special_turn_reaches_nan(specials, 0, static_cast<size_t>(last_special) + 1);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    double x = 0;
    switch (d) {
      case Distribution::kNormal:
        x = normal(rng);
        break;
      case Distribution::kUniform:
        x = 2 * unit(rng) - 1;
        break;
      case Distribution::kPositive:
        x = std::exp2(-8 + 16 * unit(rng));
        break;
      case Distribution::kWide: {
        double lo = f.min_normal_exp - 4, hi = f.max_exp / 2.0;
        x = std::exp2(lo + (hi - lo) * unit(rng)) * (unit(rng) < 0.5 ? -1 : 1);
        break;
      }
      case Distribution::kSpecial:
        if (k % 3 != 0)
          x = normal(rng);
        else if (!nan_reached && k / 3 == last_special)
          x = std::numeric_limits<double>::quiet_NaN();
        else
          x = specials[static_cast<size_t>(k / 3) % specials.size()];
        break;
      case Distribution::kOffset:
        x = offset_for(dtype) + normal(rng);
        break;
      case Distribution::kLarge:
        x = large_scale_for(dtype) * normal(rng);
        break;
      case Distribution::kExhaustive: {
        if (dtype != DType::kF16 && dtype != DType::kBF16)
          throw_error(StatusCode::kInvalidArgument,
                      fmt::format("exhaustive inputs need f16 or bf16, not {}", dtype_name(dtype)));
        const auto bits = static_cast<uint16_t>(k);
        x = load_as_f64(&bits, dtype);
        // Non-finite patterns are the special cases' job (whose NaN rules
        // the NVIDIA emulation follows); here they become 0.
        if (!std::isfinite(x)) x = 0;
        break;
      }
      case Distribution::kExact: {
        const int v = static_cast<int>(unit(rng) * 9) - 4;  // -4..4, a ninth each
        x = std::abs(v) >= 4 ? 0 : v;  // -4, 0 and 4: zeros a third of the time
        break;
      }
    }
    out[static_cast<size_t>(k)] = round_to_dtype(x, dtype);
  }
  return out;
}

std::vector<double> generate_indices(int64_t n, int64_t bound, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> pick(0, bound > 0 ? bound - 1 : 0);
  std::vector<double> out(static_cast<size_t>(n));
  for (auto& x : out) x = static_cast<double>(pick(rng));
  return out;
}

}  // namespace polychip::precision
