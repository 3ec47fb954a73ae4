// SHA-256 and HMAC-SHA256 from OpenSSL's libcrypto (no hand-written
// cryptography): every connection is authenticated with a challenge/response
// over the job's shared secret (docs/comm.md, "Security").
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace polychip::comm {

using Digest = std::array<uint8_t, 32>;

Digest sha256(std::span<const uint8_t> data);
Digest hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> message);
// Compares in time independent of where the first difference is (CRYPTO_memcmp).
bool digests_equal(const Digest& a, const Digest& b);

}  // namespace polychip::comm
