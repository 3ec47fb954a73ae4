// Reproducible test data: normally distributed values from a fixed seed.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace polychip::testing {

inline std::vector<double> random_values(size_t n, unsigned seed, double mean = 0, double sd = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(mean, sd);
  std::vector<double> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

}  // namespace polychip::testing
