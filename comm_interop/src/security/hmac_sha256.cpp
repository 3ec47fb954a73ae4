#include "security/hmac_sha256.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "polychip/error.hpp"

namespace polychip::comm {

Digest sha256(std::span<const uint8_t> data) {
  Digest d{};
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), d.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != d.size())
    throw_error(StatusCode::kInternal, "OpenSSL: SHA-256 failed");
  return d;
}

Digest hmac_sha256(std::span<const uint8_t> key, std::span<const uint8_t> message) {
  Digest d{};
  unsigned int length = 0;
  // A null key pointer with length 0 is refused by some OpenSSL versions.
  static const uint8_t kNoKey = 0;
  if (!HMAC(EVP_sha256(), key.empty() ? &kNoKey : key.data(), static_cast<int>(key.size()),
            message.data(), message.size(), d.data(), &length) ||
      length != d.size())
    throw_error(StatusCode::kInternal, "OpenSSL: HMAC-SHA256 failed");
  return d;
}

bool digests_equal(const Digest& a, const Digest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace polychip::comm
