#include "security/handshake.hpp"

#include <cstring>

#include "polychip/error.hpp"

namespace polychip::comm {
namespace {
constexpr uint32_t kAcceptedMagic = 0x4b4f4350;  // "PCOK"

// The first bytes of an answer, printable ASCII kept and the rest as '.',
// so a user sees which service answered ("HTTP/1.1", "SSH-2.0-").
std::string answer_prefix(const uint8_t* bytes, size_t size) {
  std::string text;
  for (size_t i = 0; i < size && i < 12; ++i) {
    text += bytes[i] >= 0x20 && bytes[i] < 0x7f ? static_cast<char>(bytes[i]) : '.';
  }
  return text;
}
}  // namespace

void handshake_as_connector(int fd, Hello hello, const Credentials& credentials,
                            const Deadline& deadline, const std::string& peer_name) {
  random_bytes(hello.nonce.data(), hello.nonce.size());
  hello.job = credentials.job;
  std::vector<uint8_t> hello_bytes = encode_hello(hello);
  std::string what = "handshake with " + peer_name;
  write_exact(fd, hello_bytes.data(), hello_bytes.size(), deadline, what.c_str());
  uint8_t challenge_bytes[kChallengeSize];
  try {
    read_exact(fd, challenge_bytes, sizeof(challenge_bytes), deadline, what.c_str());
  } catch (const Error& e) {
    if (e.code() != StatusCode::kUnavailable) throw;
    throw_error(StatusCode::kUnavailable,
                what +
                    ": the peer closed the connection before its challenge (it failed or gave up "
                    "on the job, or it belongs to another job or speaks another wire version)");
  }
  Challenge challenge;
  try {
    challenge = parse_challenge(challenge_bytes);
  } catch (const Error& e) {
    if (e.code() != StatusCode::kDataCorruption) throw;
    throw_error(StatusCode::kFailedPrecondition,
                what + ": the answer is not a polychip handshake (it began \"" +
                    answer_prefix(challenge_bytes, sizeof(challenge_bytes)) +
                    "\"): another service on that port, or a wrong address or port? (" +
                    e.message() + ")");
  }
  Digest expected = acceptor_proof(credentials.secret, hello_bytes, challenge.nonce);
  if (!digests_equal(expected, challenge.proof)) {
    throw_error(StatusCode::kFailedPrecondition,
                what +
                    ": the peer could not prove the job secret (POLYCHIP_COMM_SECRET "
                    "differs?); connection dropped");
  }
  std::vector<uint8_t> response =
      encode_response(connector_proof(credentials.secret, hello_bytes, challenge.nonce));
  write_exact(fd, response.data(), response.size(), deadline, what.c_str());
  // The peer proved the same secret, so it accepts our proof: a hang-up
  // here means it failed or gave up on the job, not a refusal.
  uint32_t verdict = 0;
  try {
    read_exact(fd, &verdict, sizeof(verdict), deadline, what.c_str());
  } catch (const Error& e) {
    if (e.code() != StatusCode::kUnavailable) throw;
    throw_error(StatusCode::kUnavailable,
                what +
                    ": the peer closed the connection before accepting it (it failed or "
                    "gave up on the job)");
  }
  if (verdict != kAcceptedMagic) {
    throw_error(StatusCode::kDataCorruption, what + ": malformed handshake verdict");
  }
}

Hello handshake_as_acceptor(int fd, const Credentials& credentials, const Deadline& deadline) {
  uint8_t hello_bytes[kHelloSize];
  read_exact(fd, hello_bytes, sizeof(hello_bytes), deadline, "handshake (acceptor)");
  Hello hello = parse_hello(hello_bytes);
  if (hello.job != credentials.job) {
    throw_error(StatusCode::kFailedPrecondition,
                "handshake: connection from rank " + std::to_string(hello.rank) +
                    " of another job (job id " + to_hex(hello.job) + ", ours " +
                    to_hex(credentials.job) + ")");
  }
  Challenge challenge;
  random_bytes(challenge.nonce.data(), challenge.nonce.size());
  challenge.proof = acceptor_proof(credentials.secret, hello_bytes, challenge.nonce);
  std::vector<uint8_t> challenge_bytes = encode_challenge(challenge);
  write_exact(fd, challenge_bytes.data(), challenge_bytes.size(), deadline, "handshake (acceptor)");
  uint8_t response_bytes[kResponseSize];
  try {
    read_exact(fd, response_bytes, sizeof(response_bytes), deadline, "handshake (acceptor)");
  } catch (const Error& e) {
    // A connector that cannot verify our proof hangs up instead of answering.
    if (e.code() != StatusCode::kUnavailable) throw;
    throw_error(StatusCode::kFailedPrecondition,
                "handshake: rank " + std::to_string(hello.rank) +
                    " hung up on our proof of the job secret: its POLYCHIP_COMM_SECRET differs");
  }
  Digest proof = parse_response(response_bytes);
  Digest expected = connector_proof(credentials.secret, hello_bytes, challenge.nonce);
  if (!digests_equal(proof, expected)) {
    throw_error(StatusCode::kFailedPrecondition,
                "handshake: connection claiming rank " + std::to_string(hello.rank) +
                    " could not prove the job secret (POLYCHIP_COMM_SECRET differs?); dropped");
  }
  write_exact(fd, &kAcceptedMagic, sizeof(kAcceptedMagic), deadline, "handshake (acceptor)");
  return hello;
}

}  // namespace polychip::comm
