// SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104): authenticates every
// connection with a challenge/response over the job's shared secret.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace polychip::comm {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  Digest finish();

 private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> block_{};
  size_t block_used_ = 0;
  uint64_t total_bytes_ = 0;
};

Digest sha256(std::span<const uint8_t> data);
Digest hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> message);
// Compares in time independent of where the first difference is.
bool digests_equal(const Digest& a, const Digest& b);

}  // namespace polychip::comm
