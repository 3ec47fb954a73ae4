// Seeded value generators. Every value comes back already rounded to the
// target dtype, so the device, the oracle and the NVIDIA emulation all see
// exactly the same numbers.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "polychip/dtype.hpp"

namespace polychip::precision {

enum class Distribution {
  kNormal,      // N(0, 1)
  kUniform,     // U(-1, 1)
  kPositive,    // log-uniform in [2^-8, 2^8]: the domain of log, sqrt, rsqrt
  kWide,        // random sign, 2^U(emin - 4, emax / 2): subnormals to huge
  kSpecial,     // every third value from ±0, subnormals, min/max normal, ±Inf, NaN, ±1
                // (a tensor too short to reach NaN ends its specials with it)
  kOffset,      // a large offset plus N(0, 1): stresses variance computations
  kLarge,       // N(0, 1) * a scale that overflows exp() of the dtype
  kExact,       // integers in [-3, 3], a third of them 0 (benchdnn): sums of products
                // of a few thousand are exact in any order, so tolerance is 0
  kExhaustive,  // f16/bf16: every bit pattern in order (65,536 values; NaN, Inf -> 0)
};

// The distribution named by a variant token, or false when the token is
// not a distribution name.
bool parse_distribution(std::string_view token, Distribution& out);
std::string_view distribution_name(Distribution d);

// Limits of a floating dtype.
struct FloatFormat {
  int mantissa_bits;   // explicit fraction bits
  int min_normal_exp;  // of the smallest normal: 2^min_normal_exp
  int max_exp;         // max finite < 2^(max_exp + 1)
  double max_finite;
  double min_normal() const;
  double min_subnormal() const;
};
// Throws INVALID_ARGUMENT for non-floating dtypes.
FloatFormat float_format(DType dtype);

// The special values of `dtype`: ±0, ±min subnormal, max subnormal, ±min
// normal, ±max, ±Inf, NaN, ±1 (those the dtype can represent).
std::vector<double> special_values(DType dtype);

// Whether `count` of `specials` (special_values()) taken in turn from place
// `first`, cycling, include its NaN. A case whose turn does not reach it
// gives its last special place NaN instead, so every special case holds one.
bool special_turn_reaches_nan(const std::vector<double>& specials, size_t first, size_t count);

// n values of `d` rounded to `dtype`.
std::vector<double> generate_values(Distribution d, DType dtype, int64_t n, std::mt19937_64& rng);

// n integers uniform in [0, bound).
std::vector<double> generate_indices(int64_t n, int64_t bound, std::mt19937_64& rng);

}  // namespace polychip::precision
