// Mutual HMAC-SHA256 challenge/response run on every new connection (peer
// data sockets and the rendezvous store). A side that cannot prove the job's
// secret is dropped before any other byte is read from it.
#pragma once

#include <vector>

#include "transport/tcp/socket.hpp"
#include "wire/wire.hpp"

namespace polychip::comm {

struct Credentials {
  std::vector<uint8_t> secret;
  JobId job{};
};

// Throws FAILED_PRECONDITION when the acceptor refuses us or cannot prove
// the secret; UNAVAILABLE / DEADLINE_EXCEEDED on transport failures.
void handshake_as_connector(int fd, Hello hello, const Credentials& credentials,
                            const Deadline& deadline, const std::string& peer_name);
// Returns the verified Hello; throws (the caller closes the socket) when the
// connector is from another job or fails to prove the secret.
Hello handshake_as_acceptor(int fd, const Credentials& credentials, const Deadline& deadline);

}  // namespace polychip::comm
