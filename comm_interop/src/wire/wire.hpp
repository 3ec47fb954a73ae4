// The wire protocol (docs/comm.md "Wire protocol"): fixed-size, CRC-guarded
// frame headers for data, a three-message HMAC handshake on every
// connection, and the rendezvous store's requests. Every parser validates
// every field and throws Error(DATA_CORRUPTION) naming what was wrong.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "security/hmac_sha256.hpp"
#include "wire/remote_region.hpp"

namespace polychip::comm {

// 3: status frames (kind 5); 4: RDMA offers; 5: shm mailboxes; 6: all-gathers
// through the mailboxes too; 7: placements on RDMA lanes (kind 6, flag 2).
inline constexpr uint8_t kWireVersion = 7;
inline constexpr uint32_t kFrameMagic = 0x314d4350;      // "PCM1"
inline constexpr uint32_t kHelloMagic = 0x31484350;      // "PCH1"
inline constexpr uint32_t kChallengeMagic = 0x31434350;  // "PCC1"
inline constexpr uint32_t kResponseMagic = 0x31524350;   // "PCR1"
// Largest payload a frame may announce (chunks are ~1 MiB; p2p messages
// are split into frames no larger than this).
inline constexpr uint64_t kMaxFramePayload = uint64_t{64} << 20;

enum class FrameKind : uint8_t {
  kCollective = 1,    // seq = collective sequence number of the communicator
  kPointToPoint = 2,  // seq = per-(sender, receiver) message number
  kAbort = 3,         // payload = UTF-8 reason; the sender is giving up
  kDoorbell = 4,      // no payload: new bytes or free space in a shared-memory ring
  kStatus = 5,        // no payload: where the sender waits (a timeout's job-wide view)
  kPlacement = 6,     // payload = PlacementOffers of collective `seq` (RDMA lanes)
};
// The `step` of a status frame: what the sender is waiting in.
enum class WaitingIn : uint32_t { kCollective = 1, kPointToPoint = 2 };

// kFlagPlaced (collective frames on an RDMA lane): the payload was written
// straight into the buffer the receiver offered for it; none follows.
enum FrameFlags : uint16_t { kFlagPayloadCrc = 1, kFlagPlaced = 2 };

// The user's call a collective frame belongs to. Every rank must make the
// same calls in the same order; a frame whose call differs from the
// receiver's for the same sequence number fails both at once, naming both.
struct CallSignature {
  // A polychip::comm::Collective (types.hpp); 0: not a collective frame.
  uint8_t collective = 0;
  uint8_t dtype = 0;   // polychip_dtype
  uint8_t op = 0;      // ReduceOp
  int32_t root = -1;   // -1 for collectives without one
  uint64_t count = 0;  // the call's count argument
  bool operator==(const CallSignature&) const = default;
};
inline constexpr uint8_t kCollectiveKinds = 7;  // Collective's values are 1..7
inline constexpr uint8_t kReduceOps = 5;        // ReduceOp values 0..4

struct FrameHeader {
  FrameKind kind = FrameKind::kCollective;
  uint16_t flags = 0;
  uint64_t seq = 0;
  uint32_t step = 0;
  uint32_t chunk = 0;
  uint64_t payload_bytes = 0;
  uint32_t payload_crc = 0;
  uint32_t source_rank = 0;
  CallSignature call;  // collective frames, and status frames sent from a collective
};
inline constexpr size_t kFrameHeaderSize = 64;

void encode_frame_header(const FrameHeader& h, uint8_t out[kFrameHeaderSize]);
// Validates magic, version, kind, flags, header CRC, payload size and that
// the source is `expected_source`.
FrameHeader parse_frame_header(std::span<const uint8_t> bytes, uint32_t expected_source);

// A receiver's offer of a collective frame's destination on an RDMA lane:
// the sender may write the payload of frame (seq, step, chunk) there
// instead of into the ring. A placement frame (kind 6) carries 1 to
// kMaxPlacementOffers of them for the collective its header's seq names.
struct PlacementOffer {
  uint32_t step = 0;
  uint32_t chunk = 0;
  RemoteRegion region;
};
inline constexpr size_t kPlacementOfferBytes = 8 + kRemoteRegionBytes;
inline constexpr size_t kMaxPlacementOffers = 128;
std::vector<uint8_t> encode_placement_offers(std::span<const PlacementOffer> offers);
// Validates the count and each region's size (1 .. kMaxFramePayload).
std::vector<PlacementOffer> parse_placement_offers(std::span<const uint8_t> bytes);

// Handshake: connector -> Hello; acceptor -> Challenge (its nonce and its
// proof); connector -> Response (its proof). Both proofs are HMACs over the
// Hello and the acceptor's nonce, so neither side can be replayed.
enum class ConnectionRole : uint16_t { kPeer = 1, kStore = 2 };
using JobId = std::array<uint8_t, 16>;
using Nonce = std::array<uint8_t, 32>;

struct Hello {
  ConnectionRole role = ConnectionRole::kPeer;
  JobId job{};
  uint32_t rank = 0;
  uint32_t world = 0;
  uint32_t socket_index = 0;
  Nonce nonce{};
};
inline constexpr size_t kHelloSize = 4 + 2 + 2 + 16 + 4 + 4 + 4 + 32;
inline constexpr size_t kChallengeSize = 4 + 32 + 32;
inline constexpr size_t kResponseSize = 4 + 32;
// Most ranks and sockets a Hello may name.
inline constexpr uint32_t kMaxWorld = 1u << 20;
inline constexpr uint32_t kMaxSocketsPerPeer = 16;

std::vector<uint8_t> encode_hello(const Hello& h);
Hello parse_hello(std::span<const uint8_t> bytes);
struct Challenge {
  Nonce nonce{};
  Digest proof{};
};
std::vector<uint8_t> encode_challenge(const Challenge& c);
Challenge parse_challenge(std::span<const uint8_t> bytes);
std::vector<uint8_t> encode_response(const Digest& proof);
Digest parse_response(std::span<const uint8_t> bytes);
// The proofs: HMAC(secret, label | hello bytes | acceptor nonce).
Digest acceptor_proof(std::span<const uint8_t> secret, std::span<const uint8_t> hello_bytes,
                      const Nonce& acceptor_nonce);
Digest connector_proof(std::span<const uint8_t> secret, std::span<const uint8_t> hello_bytes,
                       const Nonce& acceptor_nonce);

// Shared-memory links, negotiated once per peer pair right after the TCP
// mesh is up (on socket 0): each side offers the ring it will receive on;
// the other maps it and replies whether it could. A link uses shared memory
// only when both offers were accepted.
inline constexpr uint32_t kShmOfferMagic = 0x314f4350;  // "PCO1"
inline constexpr uint32_t kShmReplyMagic = 0x31414350;  // "PCA1"
inline constexpr size_t kShmNameMax = 63;
struct ShmOffer {
  bool offered = false;
  uint64_t capacity = 0;
  std::array<uint8_t, 32> token{};
  std::string name;  // POSIX shm name, "/..." of at most kShmNameMax bytes
};
inline constexpr size_t kShmOfferSize = 4 + 4 + 8 + 32 + 1 + kShmNameMax;
inline constexpr size_t kShmReplySize = 8;
// Largest shared-memory ring a peer may offer.
inline constexpr uint64_t kMaxShmRingBytes = uint64_t{1} << 30;
std::vector<uint8_t> encode_shm_offer(const ShmOffer& o);
ShmOffer parse_shm_offer(std::span<const uint8_t> bytes);
std::vector<uint8_t> encode_shm_reply(bool accepted);
bool parse_shm_reply(std::span<const uint8_t> bytes);

// RDMA lanes, negotiated likewise on socket 0 with every peer that has no
// shared-memory lane: each side offers its libfabric provider and endpoint
// address, the ring it receives on and the credit box its sending side
// receives on; the other adds the address and replies whether it could. A
// lane uses RDMA only when both offers were accepted.
inline constexpr uint32_t kRdmaOfferMagic = 0x32524350;  // "PCR2"
inline constexpr uint32_t kRdmaReplyMagic = 0x32414350;  // "PCA2"
inline constexpr size_t kRdmaProviderMax = 31;
inline constexpr size_t kRdmaAddressMax = 256;
struct RdmaOffer {
  bool offered = false;
  std::string provider;          // a libfabric provider name, [a-z0-9_;]
  std::vector<uint8_t> address;  // the provider's endpoint name
  RemoteRegion ring, credit_box;
};
inline constexpr size_t kRdmaOfferSize =
    4 + 4 + 1 + kRdmaProviderMax + 2 + kRdmaAddressMax + 2 * kRemoteRegionBytes;
inline constexpr size_t kRdmaReplySize = 8;
std::vector<uint8_t> encode_rdma_offer(const RdmaOffer& o);
RdmaOffer parse_rdma_offer(std::span<const uint8_t> bytes);
std::vector<uint8_t> encode_rdma_reply(bool accepted);
bool parse_rdma_reply(std::span<const uint8_t> bytes);

// Rendezvous store: length-prefixed requests/responses after the handshake.
enum class StoreOp : uint8_t { kSet = 1, kGet = 2, kAdd = 3 };
struct StoreRequest {
  StoreOp op = StoreOp::kSet;
  std::string key;
  std::vector<uint8_t> value;  // kAdd: 8-byte little-endian increment
};
inline constexpr uint32_t kMaxStoreKey = 256;
inline constexpr uint32_t kMaxStoreValue = 1u << 16;
// Requests are sent as u32 length + body; `body` excludes the length.
std::vector<uint8_t> encode_store_request(const StoreRequest& r);
StoreRequest parse_store_request(std::span<const uint8_t> body);

// One rank's rendezvous record: who it is and where to reach it.
struct PeerInfo {
  uint32_t rank = 0;
  std::string host;     // hostname, for messages
  std::string address;  // IPv4/IPv6 literal others connect to
  uint16_t port = 0;
  std::string device_type;  // "vendor.model" or "host"
  std::string vendor;
  uint32_t pid = 0;
};
std::vector<uint8_t> encode_peer_info(const PeerInfo& p);
PeerInfo parse_peer_info(std::span<const uint8_t> bytes);

std::string to_hex(std::span<const uint8_t> bytes);
// Throws INVALID_ARGUMENT naming `what` on a bad hex string.
std::vector<uint8_t> from_hex(std::string_view hex, const char* what);

}  // namespace polychip::comm
