#include "npy_file.hpp"

#include <cstring>

namespace polychip::training {

std::string encode_npy_f64(const std::vector<double>& values, int64_t rows, int64_t cols) {
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  // magic (6) + version (2) + length (2) + header + '\n', padded to 64.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>((header.size() >> 8) & 0xFF);
  out += header;
  const size_t at = out.size();
  out.resize(at + values.size() * 8);
  // An empty vector's data() may be null, which memcpy must not get.
  if (!values.empty()) std::memcpy(out.data() + at, values.data(), values.size() * 8);
  return out;
}

}  // namespace polychip::training
