#include "wire/wire.hpp"

#include <cctype>
#include <cstring>

#include "polychip/dtype.hpp"
#include "polychip/error.hpp"
#include "wire/byte_io.hpp"
#include "wire/crc32c.hpp"

namespace polychip::comm {
namespace {

[[noreturn]] void corrupt(const std::string& what) {
  throw_error(StatusCode::kDataCorruption, what);
}

void check_magic(ByteReader& r, uint32_t expected, const char* what) {
  uint32_t magic = r.u32("magic");
  if (magic != expected) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s: bad magic 0x%08x (expected 0x%08x)", what, magic,
                  expected);
    corrupt(buf);
  }
}

// An offer's magic and flags word (1: offered, 0: declined, else corrupt).
bool parse_offer_header(ByteReader& r, uint32_t magic, const char* what) {
  check_magic(r, magic, what);
  const uint32_t flags = r.u32("flags");
  if (flags > 1) corrupt(std::string(what) + ": unknown flags " + std::to_string(flags));
  return flags == 1;
}

bool valid_hostname_chars(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

void encode_frame_header(const FrameHeader& h, uint8_t out[kFrameHeaderSize]) {
  ByteWriter w;
  w.u32(kFrameMagic);
  w.u8(kWireVersion);
  w.u8(static_cast<uint8_t>(h.kind));
  w.u16(h.flags);
  w.u64(h.seq);
  w.u32(h.step);
  w.u32(h.chunk);
  w.u64(h.payload_bytes);
  w.u32(h.payload_crc);
  w.u32(h.source_rank);
  w.u8(h.call.collective);
  w.u8(h.call.dtype);
  w.u8(h.call.op);
  w.u8(0);  // reserved
  w.u32(static_cast<uint32_t>(h.call.root));
  w.u64(h.call.count);
  w.u32(0);  // reserved
  w.u32(crc32c(w.bytes().data(), w.bytes().size()));
  std::memcpy(out, w.bytes().data(), kFrameHeaderSize);
}

FrameHeader parse_frame_header(std::span<const uint8_t> bytes, uint32_t expected_source) {
  if (bytes.size() != kFrameHeaderSize) {
    corrupt("frame header: " + std::to_string(bytes.size()) + " bytes, expected " +
            std::to_string(kFrameHeaderSize));
  }
  uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + kFrameHeaderSize - 4, 4);
  ByteReader r(bytes, "frame header");
  check_magic(r, kFrameMagic, "frame header");
  uint8_t version = r.u8("version");
  if (version != kWireVersion) {
    corrupt("frame header: wire version " + std::to_string(version) + ", this build speaks " +
            std::to_string(kWireVersion));
  }
  uint32_t computed_crc = crc32c(bytes.data(), kFrameHeaderSize - 4);
  if (computed_crc != stored_crc) corrupt("frame header: header CRC32C mismatch");
  FrameHeader h;
  uint8_t kind = r.u8("kind");
  if (kind < 1 || kind > 6) corrupt("frame header: unknown kind " + std::to_string(kind));
  h.kind = static_cast<FrameKind>(kind);
  h.flags = r.u16("flags");
  if ((h.flags & ~uint16_t{kFlagPayloadCrc | kFlagPlaced}) != 0) {
    corrupt("frame header: unknown flags " + std::to_string(h.flags));
  }
  if ((h.flags & kFlagPlaced) && h.kind != FrameKind::kCollective) {
    corrupt("frame header: only a collective frame's payload is placed");
  }
  h.seq = r.u64("seq");
  h.step = r.u32("step");
  h.chunk = r.u32("chunk");
  h.payload_bytes = r.u64("payload_bytes");
  h.payload_crc = r.u32("payload_crc");
  h.source_rank = r.u32("source_rank");
  h.call.collective = r.u8("call collective");
  h.call.dtype = r.u8("call dtype");
  h.call.op = r.u8("call op");
  const uint8_t reserved_byte = r.u8("reserved");
  h.call.root = static_cast<int32_t>(r.u32("call root"));
  h.call.count = r.u64("call count");
  if (reserved_byte != 0 || r.u32("reserved") != 0)
    corrupt("frame header: reserved field is not zero");
  const bool status_from_collective =
      h.kind == FrameKind::kStatus && h.step == uint32_t(WaitingIn::kCollective);
  if ((h.kind == FrameKind::kCollective || status_from_collective) != (h.call.collective != 0) ||
      h.call.collective > kCollectiveKinds || h.call.op >= kReduceOps)
    corrupt("frame header: call signature " + std::to_string(h.call.collective) + "/" +
            std::to_string(h.call.op) + " does not fit a frame of kind " +
            std::to_string(int(h.kind)));
  if (h.call.collective != 0 && !is_valid_dtype(h.call.dtype))
    corrupt("frame header: call signature names unknown dtype code " +
            std::to_string(h.call.dtype));
  if (h.payload_bytes > kMaxFramePayload) {
    corrupt("frame header: payload of " + std::to_string(h.payload_bytes) +
            " bytes exceeds the limit of " + std::to_string(kMaxFramePayload));
  }
  if (h.kind == FrameKind::kAbort && h.payload_bytes > 4096) {
    corrupt("frame header: abort reason longer than 4096 bytes");
  }
  if (h.kind == FrameKind::kDoorbell && h.payload_bytes != 0) {
    corrupt("frame header: a doorbell carries no payload");
  }
  if (h.kind == FrameKind::kStatus && (h.payload_bytes != 0 || h.chunk != 0 ||
                                       (h.step != uint32_t(WaitingIn::kCollective) &&
                                        h.step != uint32_t(WaitingIn::kPointToPoint)))) {
    corrupt("frame header: a status frame carries no payload, and says where its sender waits");
  }
  if (h.kind == FrameKind::kPlacement &&
      (h.step != 0 || h.chunk != 0 || h.payload_bytes == 0 ||
       h.payload_bytes % kPlacementOfferBytes != 0 ||
       h.payload_bytes > kMaxPlacementOffers * kPlacementOfferBytes)) {
    corrupt("frame header: a placement frame carries 1 to " + std::to_string(kMaxPlacementOffers) +
            " offers of " + std::to_string(kPlacementOfferBytes) + " bytes, not " +
            std::to_string(h.payload_bytes) + " bytes");
  }
  if (h.source_rank != expected_source) {
    corrupt("frame header: claims to come from rank " + std::to_string(h.source_rank) +
            " on the connection of rank " + std::to_string(expected_source));
  }
  return h;
}

std::vector<uint8_t> encode_placement_offers(std::span<const PlacementOffer> offers) {
  ByteWriter w;
  for (const PlacementOffer& o : offers) {
    w.u32(o.step);
    w.u32(o.chunk);
    write_region(w, o.region);
  }
  return std::move(w.bytes());
}

std::vector<PlacementOffer> parse_placement_offers(std::span<const uint8_t> bytes) {
  if (bytes.empty() || bytes.size() % kPlacementOfferBytes != 0 ||
      bytes.size() > kMaxPlacementOffers * kPlacementOfferBytes) {
    corrupt("placement offers: " + std::to_string(bytes.size()) + " bytes");
  }
  ByteReader r(bytes, "placement offers");
  std::vector<PlacementOffer> offers(bytes.size() / kPlacementOfferBytes);
  for (PlacementOffer& o : offers) {
    o.step = r.u32("step");
    o.chunk = r.u32("chunk");
    o.region = read_region(r, "placement region");
    if (o.region.size == 0 || o.region.size > kMaxFramePayload) {
      corrupt("placement offers: a region of " + std::to_string(o.region.size) + " bytes");
    }
  }
  return offers;
}

std::vector<uint8_t> encode_shm_offer(const ShmOffer& o) {
  ByteWriter w;
  w.u32(kShmOfferMagic);
  w.u32(o.offered ? 1 : 0);
  w.u64(o.capacity);
  w.raw(o.token.data(), o.token.size());
  std::string name = o.offered ? o.name : std::string();
  if (name.size() > kShmNameMax) {
    throw_error(StatusCode::kInvalidArgument, "shared-memory offer: name too long");
  }
  w.u8(static_cast<uint8_t>(name.size()));
  name.resize(kShmNameMax, '\0');
  w.raw(name.data(), kShmNameMax);
  return std::move(w.bytes());
}

ShmOffer parse_shm_offer(std::span<const uint8_t> bytes) {
  ByteReader r(bytes, "shared-memory offer");
  ShmOffer o;
  o.offered = parse_offer_header(r, kShmOfferMagic, "shared-memory offer");
  o.capacity = r.u64("capacity");
  r.raw(o.token.data(), o.token.size(), "token");
  uint8_t length = r.u8("name length");
  char name[kShmNameMax];
  r.raw(name, kShmNameMax, "name");
  r.expect_end();
  if (!o.offered) return o;
  if (length < 2 || length > kShmNameMax) {
    corrupt("shared-memory offer: name length " + std::to_string(length));
  }
  o.name.assign(name, length);
  // A single "/component" of safe characters: the sender passes it to shm_open.
  if (o.name[0] != '/') corrupt("shared-memory offer: name does not start with '/'");
  for (size_t i = 1; i < o.name.size(); ++i) {
    char c = o.name[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) {
      corrupt("shared-memory offer: name has a character outside [A-Za-z0-9_-]");
    }
  }
  if (o.capacity == 0 || (o.capacity & (o.capacity - 1)) != 0 || o.capacity > kMaxShmRingBytes) {
    corrupt("shared-memory offer: capacity " + std::to_string(o.capacity) +
            " is not a power of two up to " + std::to_string(kMaxShmRingBytes));
  }
  return o;
}

namespace {

std::vector<uint8_t> encode_link_reply(uint32_t magic, bool accepted) {
  ByteWriter w;
  w.u32(magic);
  w.u32(accepted ? 1 : 0);
  return std::move(w.bytes());
}

bool parse_link_reply(std::span<const uint8_t> bytes, uint32_t magic, const char* what) {
  ByteReader r(bytes, what);
  check_magic(r, magic, what);
  uint32_t accepted = r.u32("accepted");
  r.expect_end();
  if (accepted > 1) corrupt(std::string(what) + ": unknown value " + std::to_string(accepted));
  return accepted == 1;
}

}  // namespace

std::vector<uint8_t> encode_shm_reply(bool accepted) {
  return encode_link_reply(kShmReplyMagic, accepted);
}

bool parse_shm_reply(std::span<const uint8_t> bytes) {
  return parse_link_reply(bytes, kShmReplyMagic, "shared-memory reply");
}

std::vector<uint8_t> encode_rdma_reply(bool accepted) {
  return encode_link_reply(kRdmaReplyMagic, accepted);
}

bool parse_rdma_reply(std::span<const uint8_t> bytes) {
  return parse_link_reply(bytes, kRdmaReplyMagic, "RDMA reply");
}

std::vector<uint8_t> encode_rdma_offer(const RdmaOffer& o) {
  ByteWriter w;
  w.u32(kRdmaOfferMagic);
  w.u32(o.offered ? 1 : 0);
  std::string provider = o.offered ? o.provider : std::string();
  std::vector<uint8_t> address = o.offered ? o.address : std::vector<uint8_t>();
  if (provider.size() > kRdmaProviderMax || address.size() > kRdmaAddressMax) {
    throw_error(StatusCode::kInvalidArgument, "RDMA offer: provider name or address too long");
  }
  w.u8(static_cast<uint8_t>(provider.size()));
  provider.resize(kRdmaProviderMax, '\0');
  w.raw(provider.data(), kRdmaProviderMax);
  w.u16(static_cast<uint16_t>(address.size()));
  address.resize(kRdmaAddressMax, 0);
  w.raw(address.data(), kRdmaAddressMax);
  for (const RemoteRegion* region : {&o.ring, &o.credit_box}) {
    write_region(w, o.offered ? *region : RemoteRegion{});
  }
  return std::move(w.bytes());
}

RdmaOffer parse_rdma_offer(std::span<const uint8_t> bytes) {
  ByteReader r(bytes, "RDMA offer");
  RdmaOffer o;
  o.offered = parse_offer_header(r, kRdmaOfferMagic, "RDMA offer");
  uint8_t provider_length = r.u8("provider length");
  char provider[kRdmaProviderMax];
  r.raw(provider, kRdmaProviderMax, "provider");
  uint16_t address_length = r.u16("address length");
  uint8_t address[kRdmaAddressMax];
  r.raw(address, kRdmaAddressMax, "address");
  for (RemoteRegion* region : {&o.ring, &o.credit_box}) *region = read_region(r, "region");
  r.expect_end();
  if (!o.offered) return {};
  if (provider_length == 0 || provider_length > kRdmaProviderMax) {
    corrupt("RDMA offer: provider name length " + std::to_string(provider_length));
  }
  o.provider.assign(provider, provider_length);
  for (char c : o.provider) {
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '_' || c == ';')) {
      corrupt("RDMA offer: provider name has a character outside [a-z0-9_;]");
    }
  }
  if (address_length == 0 || address_length > kRdmaAddressMax) {
    corrupt("RDMA offer: address length " + std::to_string(address_length));
  }
  o.address.assign(address, address + address_length);
  const uint64_t ring = o.ring.size;
  if (ring == 0 || (ring & (ring - 1)) != 0 || ring > kMaxShmRingBytes) {
    corrupt("RDMA offer: ring of " + std::to_string(ring) + " bytes is not a power of two up to " +
            std::to_string(kMaxShmRingBytes));
  }
  if (o.credit_box.size < 8 || o.credit_box.size > 4096) {
    corrupt("RDMA offer: credit box of " + std::to_string(o.credit_box.size) + " bytes");
  }
  return o;
}

std::vector<uint8_t> encode_hello(const Hello& h) {
  ByteWriter w;
  w.u32(kHelloMagic);
  w.u16(kWireVersion);
  w.u16(static_cast<uint16_t>(h.role));
  w.raw(h.job.data(), h.job.size());
  w.u32(h.rank);
  w.u32(h.world);
  w.u32(h.socket_index);
  w.raw(h.nonce.data(), h.nonce.size());
  return std::move(w.bytes());
}

Hello parse_hello(std::span<const uint8_t> bytes) {
  ByteReader r(bytes, "handshake hello");
  check_magic(r, kHelloMagic, "handshake hello");
  uint16_t version = r.u16("version");
  if (version != kWireVersion) {
    corrupt("handshake hello: wire version " + std::to_string(version) + ", this build speaks " +
            std::to_string(kWireVersion));
  }
  Hello h;
  uint16_t role = r.u16("role");
  if (role != 1 && role != 2) corrupt("handshake hello: unknown role " + std::to_string(role));
  h.role = static_cast<ConnectionRole>(role);
  r.raw(h.job.data(), h.job.size(), "job");
  h.rank = r.u32("rank");
  h.world = r.u32("world");
  h.socket_index = r.u32("socket_index");
  r.raw(h.nonce.data(), h.nonce.size(), "nonce");
  r.expect_end();
  if (h.world == 0 || h.world > kMaxWorld) {
    corrupt("handshake hello: world size " + std::to_string(h.world) + " out of range");
  }
  if (h.rank >= h.world) {
    corrupt("handshake hello: rank " + std::to_string(h.rank) + " >= world size " +
            std::to_string(h.world));
  }
  if (h.socket_index >= kMaxSocketsPerPeer) {
    corrupt("handshake hello: socket index " + std::to_string(h.socket_index) + " out of range");
  }
  return h;
}

std::vector<uint8_t> encode_challenge(const Challenge& c) {
  ByteWriter w;
  w.u32(kChallengeMagic);
  w.raw(c.nonce.data(), c.nonce.size());
  w.raw(c.proof.data(), c.proof.size());
  return std::move(w.bytes());
}

Challenge parse_challenge(std::span<const uint8_t> bytes) {
  ByteReader r(bytes, "handshake challenge");
  check_magic(r, kChallengeMagic, "handshake challenge");
  Challenge c;
  r.raw(c.nonce.data(), c.nonce.size(), "nonce");
  r.raw(c.proof.data(), c.proof.size(), "proof");
  r.expect_end();
  return c;
}

std::vector<uint8_t> encode_response(const Digest& proof) {
  ByteWriter w;
  w.u32(kResponseMagic);
  w.raw(proof.data(), proof.size());
  return std::move(w.bytes());
}

Digest parse_response(std::span<const uint8_t> bytes) {
  ByteReader r(bytes, "handshake response");
  check_magic(r, kResponseMagic, "handshake response");
  Digest d;
  r.raw(d.data(), d.size(), "proof");
  r.expect_end();
  return d;
}

static Digest proof(const char* label, std::span<const uint8_t> secret,
                    std::span<const uint8_t> hello_bytes, const Nonce& acceptor_nonce) {
  std::vector<uint8_t> message(label, label + std::strlen(label));
  message.insert(message.end(), hello_bytes.begin(), hello_bytes.end());
  message.insert(message.end(), acceptor_nonce.begin(), acceptor_nonce.end());
  return hmac_sha256(secret, message);
}

Digest acceptor_proof(std::span<const uint8_t> secret, std::span<const uint8_t> hello_bytes,
                      const Nonce& acceptor_nonce) {
  return proof("polychip-comm acceptor v1|", secret, hello_bytes, acceptor_nonce);
}

Digest connector_proof(std::span<const uint8_t> secret, std::span<const uint8_t> hello_bytes,
                       const Nonce& acceptor_nonce) {
  return proof("polychip-comm connector v1|", secret, hello_bytes, acceptor_nonce);
}

std::vector<uint8_t> encode_store_request(const StoreRequest& req) {
  ByteWriter w;
  w.u8(static_cast<uint8_t>(req.op));
  w.str(req.key);
  w.u32(static_cast<uint32_t>(req.value.size()));
  w.raw(req.value.data(), req.value.size());
  return std::move(w.bytes());
}

StoreRequest parse_store_request(std::span<const uint8_t> body) {
  ByteReader r(body, "store request");
  StoreRequest req;
  uint8_t op = r.u8("op");
  if (op < 1 || op > 3) corrupt("store request: unknown op " + std::to_string(op));
  req.op = static_cast<StoreOp>(op);
  req.key = r.str("key", kMaxStoreKey);
  if (req.key.empty()) corrupt("store request: empty key");
  uint32_t n = r.u32("value_length");
  if (n > kMaxStoreValue) {
    corrupt("store request: value of " + std::to_string(n) + " bytes exceeds " +
            std::to_string(kMaxStoreValue));
  }
  req.value.resize(n);
  r.raw(req.value.data(), n, "value");
  r.expect_end();
  if (req.op == StoreOp::kAdd && req.value.size() != 8) {
    corrupt("store request: add needs an 8-byte increment, got " + std::to_string(n));
  }
  if (req.op == StoreOp::kGet && !req.value.empty()) {
    corrupt("store request: get carries no value");
  }
  return req;
}

std::vector<uint8_t> encode_peer_info(const PeerInfo& p) {
  ByteWriter w;
  w.u32(0x31494350);  // "PCI1"
  w.u32(p.rank);
  w.str(p.host);
  w.str(p.address);
  w.u16(p.port);
  w.str(p.device_type);
  w.str(p.vendor);
  w.u32(p.pid);
  return std::move(w.bytes());
}

PeerInfo parse_peer_info(std::span<const uint8_t> bytes) {
  ByteReader r(bytes, "peer record");
  check_magic(r, 0x31494350, "peer record");
  PeerInfo p;
  p.rank = r.u32("rank");
  p.host = r.str("host", 255);
  p.address = r.str("address", 64);
  p.port = r.u16("port");
  p.device_type = r.str("device_type", 128);
  p.vendor = r.str("vendor", 128);
  p.pid = r.u32("pid");
  r.expect_end();
  if (p.port == 0) corrupt("peer record: port 0");
  if (p.address.empty()) corrupt("peer record: empty address");
  if (!valid_hostname_chars(p.host) || !valid_hostname_chars(p.address) ||
      !valid_hostname_chars(p.device_type) || !valid_hostname_chars(p.vendor)) {
    corrupt("peer record: control characters in a text field");
  }
  return p;
}

std::string to_hex(std::span<const uint8_t> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s.push_back(digits[b >> 4]);
    s.push_back(digits[b & 15]);
  }
  return s;
}

std::vector<uint8_t> from_hex(std::string_view hex, const char* what) {
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) {
    throw_error(StatusCode::kInvalidArgument,
                std::string(what) + ": hex string has odd length " + std::to_string(hex.size()));
  }
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      throw_error(StatusCode::kInvalidArgument,
                  std::string(what) + ": not a hex digit at position " + std::to_string(2 * i));
    }
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return out;
}

}  // namespace polychip::comm
