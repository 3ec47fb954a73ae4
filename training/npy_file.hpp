// NumPy's .npy format (version 1.0) for a 2-D float64 array, so per-step
// curves load with numpy.load() and nothing else.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace polychip::training {

// values: rows * cols doubles, row-major.
std::string encode_npy_f64(const std::vector<double>& values, int64_t rows, int64_t cols);

}  // namespace polychip::training
