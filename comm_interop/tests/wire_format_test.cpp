// The wire format byte by byte (docs/comm.md "Wire protocol"): a golden
// encoding of every message kind, so that an encoder and a decoder that are
// wrong the same way still fail, and every bound a parser checks at its
// boundary (the last value accepted, the first refused), the refusal naming
// what was wrong. comm_unit_test.cpp has the round trips, bit flips and the
// malformed corpus.
#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "polychip/error.hpp"
#include "wire/crc32c.hpp"
#include "wire/wire.hpp"

using namespace polychip;
using namespace polychip::comm;

namespace {

using Bytes = std::vector<uint8_t>;

// `parse` refuses its input with `code`, naming `what` in the message.
void expect_refused(const std::function<void()>& parse, const std::string& what,
                    StatusCode code = StatusCode::kDataCorruption) {
  try {
    parse();
    ADD_FAILURE() << "accepted; expected a refusal naming \"" << what << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(e.message().find(what), std::string::npos) << e.message();
  }
}

// Sets the little-endian field of `width` bytes at `offset`.
void put_le(std::span<uint8_t> bytes, size_t offset, uint64_t value, size_t width) {
  for (size_t i = 0; i < width; ++i) bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

Bytes golden(const std::string& hex) { return from_hex(hex, "golden"); }

std::string zeros(size_t bytes) { return std::string(2 * bytes, '0'); }

// ---- Frame headers -----------------------------------------------------

using HeaderBytes = std::array<uint8_t, kFrameHeaderSize>;

HeaderBytes encoded(const FrameHeader& h) {
  HeaderBytes bytes;
  encode_frame_header(h, bytes.data());
  return bytes;
}

// Encoded, then parsed on the connection of its source rank.
FrameHeader round_trip(const FrameHeader& h) {
  return parse_frame_header(encoded(h), h.source_rank);
}

// `h` encoded with the field at `offset` overwritten (one the encoder does
// not let a caller set) and the CRC recomputed, so that only that field's
// own check can refuse it.
HeaderBytes with_field(const FrameHeader& h, size_t offset, uint64_t value, size_t width) {
  HeaderBytes bytes = encoded(h);
  put_le(bytes, offset, value, width);
  put_le(bytes, kFrameHeaderSize - 4, crc32c(bytes.data(), kFrameHeaderSize - 4), 4);
  return bytes;
}

// Every field distinct, so that two fields swapped or misplaced show.
FrameHeader golden_header() {
  FrameHeader h;
  h.kind = FrameKind::kCollective;
  h.flags = kFlagPayloadCrc | kFlagPlaced;
  h.seq = 0x0102030405060708;
  h.step = 0x11121314;
  h.chunk = 0x21222324;
  h.payload_bytes = 0x312233;
  h.payload_crc = 0x41424344;
  h.source_rank = 0x51525354;
  h.call = {.collective = 5, .dtype = 4, .op = 3, .root = 0x61626364, .count = 0x7172737475767778};
  return h;
}

const std::string kGoldenHeader = std::string("50434d31")  // magic "PCM1"
                                  + "07"                   // wire version
                                  + "01"                   // kind: collective
                                  + "0300"                 // flags: payload CRC | placed
                                  + "0807060504030201"     // seq
                                  + "14131211"             // step
                                  + "24232221"             // chunk
                                  + "3322310000000000"     // payload bytes
                                  + "44434241"             // payload CRC
                                  + "54535251"             // source rank
                                  + "05040300"             // collective, dtype, op, reserved
                                  + "64636261"             // root
                                  + "7877767574737271"     // count
                                  + "00000000"             // reserved
                                  + "9aa73b70";            // CRC32C of the 60 bytes before

// Byte offsets of the frame header's fields a caller cannot set.
constexpr size_t kVersionAt = 4, kKindAt = 5, kFlagsAt = 6, kReservedByteAt = 43,
                 kReservedWordAt = 56;

// A frame of `kind` with no call signature and nothing else set.
FrameHeader plain(FrameKind kind) {
  FrameHeader h;
  h.kind = kind;
  return h;
}

TEST(WireFormat, FrameHeaderEncodesToItsGoldenBytesAndBack) {
  const FrameHeader g = golden_header();
  EXPECT_EQ(to_hex(encoded(g)), kGoldenHeader);
  const FrameHeader h = parse_frame_header(golden(kGoldenHeader), g.source_rank);
  EXPECT_EQ(h.kind, g.kind);
  EXPECT_EQ(h.flags, g.flags);
  EXPECT_EQ(h.seq, g.seq);
  EXPECT_EQ(h.step, g.step);
  EXPECT_EQ(h.chunk, g.chunk);
  EXPECT_EQ(h.payload_bytes, g.payload_bytes);
  EXPECT_EQ(h.payload_crc, g.payload_crc);
  EXPECT_EQ(h.source_rank, g.source_rank);
  EXPECT_EQ(h.call.collective, g.call.collective);
  EXPECT_EQ(h.call.dtype, g.call.dtype);
  EXPECT_EQ(h.call.op, g.call.op);
  EXPECT_EQ(h.call.root, g.call.root);
  EXPECT_EQ(h.call.count, g.call.count);
}

TEST(WireFormat, FrameHeaderIsExactlySixtyFourBytes) {
  const HeaderBytes bytes = encoded(golden_header());
  Bytes longer(bytes.begin(), bytes.end());
  longer.push_back(0);
  // The CRC sits at byte 60 whatever follows: only the size check refuses this.
  expect_refused([&] { parse_frame_header(longer, golden_header().source_rank); },
                 "65 bytes, expected 64");
  expect_refused([&] { parse_frame_header(std::span(bytes).first(63), 0); },
                 "63 bytes, expected 64");
}

TEST(WireFormat, FrameHeaderRefusesUnknownVersionKindFlagsAndNonZeroReservedFields) {
  const FrameHeader g = golden_header();
  const auto parse = [&](const HeaderBytes& b) { parse_frame_header(b, g.source_rank); };
  expect_refused([&] { parse(with_field(g, kVersionAt, kWireVersion + 1, 1)); },
                 "wire version " + std::to_string(kWireVersion + 1));
  for (uint8_t kind : {0, 7}) {
    expect_refused([&] { parse(with_field(g, kKindAt, kind, 1)); },
                   "unknown kind " + std::to_string(kind));
  }
  expect_refused([&] { parse(with_field(g, kFlagsAt, 4, 2)); }, "unknown flags 4");
  expect_refused([&] { parse(with_field(g, kReservedByteAt, 1, 1)); }, "reserved field");
  expect_refused([&] { parse(with_field(g, kReservedWordAt, 1, 4)); }, "reserved field");
  HeaderBytes bad_crc = encoded(g);
  bad_crc[kFrameHeaderSize - 1] ^= 1;
  expect_refused([&] { parse(bad_crc); }, "header CRC32C mismatch");
}

TEST(WireFormat, FrameHeaderNamesTheRankItClaimsAndTheConnectionsRank) {
  FrameHeader h = plain(FrameKind::kPointToPoint);
  h.source_rank = 5;
  expect_refused([&] { parse_frame_header(encoded(h), 4); },
                 "from rank 5 on the connection of rank 4");
}

TEST(WireFormat, CallSignatureTakesTheLastCollectiveAndReduceOpButNoMore) {
  FrameHeader h = golden_header();
  h.call.collective = kCollectiveKinds;
  h.call.op = kReduceOps - 1;
  EXPECT_EQ(round_trip(h).call, h.call);
  h.call.collective = kCollectiveKinds + 1;
  expect_refused([&] { round_trip(h); }, "call signature 8/4");
  h.call.collective = kCollectiveKinds;
  h.call.op = kReduceOps;
  expect_refused([&] { round_trip(h); }, "call signature 7/5");
}

// Every rank's call names a dtype it could run; a frame naming none is
// malformed (not a signature mismatch to report against the caller).
TEST(WireFormat, CallSignatureNamesAKnownDtype) {
  FrameHeader h = golden_header();
  h.call.dtype = POLYCHIP_DTYPE_COUNT_ - 1;
  EXPECT_EQ(round_trip(h).call, h.call);
  h.call.dtype = POLYCHIP_DTYPE_COUNT_;
  expect_refused([&] { round_trip(h); },
                 "unknown dtype code " + std::to_string(POLYCHIP_DTYPE_COUNT_));
  // A frame without a call has no dtype to check.
  FrameHeader p2p = plain(FrameKind::kPointToPoint);
  p2p.call.dtype = 200;
  EXPECT_EQ(round_trip(p2p).call.dtype, 200);
}

TEST(WireFormat, StatusFrameFromACollectiveCarriesItsCall) {
  FrameHeader h = plain(FrameKind::kStatus);
  h.step = static_cast<uint32_t>(WaitingIn::kCollective);
  expect_refused([&] { round_trip(h); }, "call signature 0/0");
}

TEST(WireFormat, StatusFrameCarriesNoPayloadAndNoChunk) {
  FrameHeader h = plain(FrameKind::kStatus);
  h.step = static_cast<uint32_t>(WaitingIn::kPointToPoint);
  EXPECT_EQ(round_trip(h).step, h.step);
  h.chunk = 1;
  expect_refused([&] { round_trip(h); }, "status frame");
  h.chunk = 0;
  h.payload_bytes = 1;
  expect_refused([&] { round_trip(h); }, "status frame");
}

// Each limit: its last value accepted, the next refused.
TEST(WireFormat, PayloadLimitsTakeTheirLastByteAndRefuseTheNext) {
  FrameHeader p2p = plain(FrameKind::kPointToPoint);
  p2p.payload_bytes = kMaxFramePayload;
  EXPECT_EQ(round_trip(p2p).payload_bytes, kMaxFramePayload);
  ++p2p.payload_bytes;
  expect_refused([&] { round_trip(p2p); }, "exceeds the limit of 67108864");

  FrameHeader abort = plain(FrameKind::kAbort);
  abort.payload_bytes = 4096;
  EXPECT_EQ(round_trip(abort).payload_bytes, 4096u);
  abort.payload_bytes = 4097;
  expect_refused([&] { round_trip(abort); }, "abort reason longer than 4096 bytes");
}

TEST(WireFormat, PlacementFrameCarriesOneToTheMostOffersAndNoStepOrChunk) {
  FrameHeader h = plain(FrameKind::kPlacement);
  for (size_t offers : {size_t{1}, kMaxPlacementOffers}) {
    h.payload_bytes = offers * kPlacementOfferBytes;
    EXPECT_EQ(round_trip(h).payload_bytes, h.payload_bytes);
  }
  h.payload_bytes = kPlacementOfferBytes;
  h.step = 1;
  expect_refused([&] { round_trip(h); }, "placement frame");
  h.step = 0;
  h.chunk = 1;
  expect_refused([&] { round_trip(h); }, "placement frame");
}

// ---- Placement offers --------------------------------------------------

TEST(WireFormat, PlacementOfferEncodesToItsGoldenBytesAndBack) {
  const PlacementOffer offer{
      0x01020304, 0x05060708, {0x1112131415161718, 0x2122232425262728, 0x313233}};
  const std::string hex = std::string("04030201")  // step
                          + "08070605"             // chunk
                          + "1817161514131211"     // region address
                          + "2827262524232221"     // region key
                          + "3332310000000000";    // region size
  EXPECT_EQ(to_hex(encode_placement_offers({&offer, 1})), hex);
  const std::vector<PlacementOffer> back = parse_placement_offers(golden(hex));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].step, offer.step);
  EXPECT_EQ(back[0].chunk, offer.chunk);
  EXPECT_EQ(back[0].region.address, offer.region.address);
  EXPECT_EQ(back[0].region.key, offer.region.key);
  EXPECT_EQ(back[0].region.size, offer.region.size);
}

TEST(WireFormat, PlacementOffersTakeTheMostOffersAndRegionsFromOneByteToAFrame) {
  std::vector<PlacementOffer> offers(kMaxPlacementOffers, {0, 0, {4096, 1, 1}});
  offers.back().region.size = kMaxFramePayload;
  const std::vector<PlacementOffer> back = parse_placement_offers(encode_placement_offers(offers));
  ASSERT_EQ(back.size(), kMaxPlacementOffers);
  EXPECT_EQ(back.front().region.size, 1u);
  EXPECT_EQ(back.back().region.size, kMaxFramePayload);
}

// ---- Shared-memory offers and link replies ----------------------------

ShmOffer golden_shm_offer() {
  ShmOffer o;
  o.offered = true;
  o.capacity = 1 << 20;
  for (size_t i = 0; i < o.token.size(); ++i) o.token[i] = static_cast<uint8_t>(0x20 + i);
  o.name = "/pc-0_Z";
  return o;
}

// Byte offsets of the shared-memory offer's name length and name.
constexpr size_t kShmNameLengthAt = 48;

TEST(WireFormat, ShmOfferEncodesToItsGoldenBytesAndBack) {
  const ShmOffer o = golden_shm_offer();
  const std::string hex =
      std::string("50434f31")                                               // magic "PCO1"
      + "01000000"                                                          // offered
      + "0000100000000000"                                                  // capacity
      + "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"  // token
      + "07"                                                                // name length
      + "2f70632d305f5a" + zeros(kShmNameMax - 7);                          // name, zero-padded
  EXPECT_EQ(to_hex(encode_shm_offer(o)), hex);
  const ShmOffer back = parse_shm_offer(golden(hex));
  EXPECT_TRUE(back.offered);
  EXPECT_EQ(back.capacity, o.capacity);
  EXPECT_EQ(back.token, o.token);
  EXPECT_EQ(back.name, o.name);
}

TEST(WireFormat, ShmOfferNameIsASlashAndOneToSixtyTwoSafeCharacters) {
  ShmOffer o = golden_shm_offer();
  for (const std::string& name : {std::string("/a"), "/" + std::string(kShmNameMax - 1, 'a')}) {
    o.name = name;
    EXPECT_EQ(parse_shm_offer(encode_shm_offer(o)).name, name);
  }
  o.name = "/";
  expect_refused([&] { parse_shm_offer(encode_shm_offer(o)); }, "name length 1");
  Bytes too_long = encode_shm_offer(golden_shm_offer());
  put_le(too_long, kShmNameLengthAt, kShmNameMax + 1, 1);
  expect_refused([&] { parse_shm_offer(too_long); }, "name length 64");
  o.name = "a/bcd";
  expect_refused([&] { parse_shm_offer(encode_shm_offer(o)); }, "does not start with '/'");
  for (const char* unsafe : {"/a.b", "/a/b"}) {
    o.name = unsafe;
    expect_refused([&] { parse_shm_offer(encode_shm_offer(o)); }, "outside [A-Za-z0-9_-]");
  }
  o.name = std::string(kShmNameMax + 1, 'a');
  expect_refused([&] { encode_shm_offer(o); }, "name too long", StatusCode::kInvalidArgument);
}

TEST(WireFormat, ShmOfferCapacityIsAPowerOfTwoUpToTheLargestRing) {
  ShmOffer o = golden_shm_offer();
  for (uint64_t capacity : {uint64_t{1}, kMaxShmRingBytes}) {
    o.capacity = capacity;
    EXPECT_EQ(parse_shm_offer(encode_shm_offer(o)).capacity, capacity);
  }
  for (uint64_t capacity : {uint64_t{0}, uint64_t{3} << 20, 2 * kMaxShmRingBytes}) {
    o.capacity = capacity;
    expect_refused([&] { parse_shm_offer(encode_shm_offer(o)); },
                   "capacity " + std::to_string(capacity));
  }
}

TEST(WireFormat, OfferFlagsAreOfferedOrDeclined) {
  Bytes shm = encode_shm_offer(golden_shm_offer());
  put_le(shm, 4, 2, 4);
  expect_refused([&] { parse_shm_offer(shm); }, "unknown flags 2");
  RdmaOffer declined;
  Bytes rdma = encode_rdma_offer(declined);
  put_le(rdma, 4, 2, 4);
  expect_refused([&] { parse_rdma_offer(rdma); }, "unknown flags 2");
}

TEST(WireFormat, LinkRepliesEncodeToTheirGoldenBytesAndTakeOnlyZeroOrOne) {
  EXPECT_EQ(to_hex(encode_shm_reply(true)), "5043413101000000");    // "PCA1", accepted
  EXPECT_EQ(to_hex(encode_rdma_reply(false)), "5043413200000000");  // "PCA2", declined
  expect_refused([&] { parse_shm_reply(golden("5043413102000000")); }, "unknown value 2");
  expect_refused([&] { parse_rdma_reply(golden("504341320100000000")); }, "1 unexpected trailing");
}

// ---- RDMA offers -------------------------------------------------------

RdmaOffer golden_rdma_offer() {
  RdmaOffer o;
  o.offered = true;
  o.provider = "tcp;ofi_rxm";
  o.address = {2, 0, 0x4e, 0x20, 127, 0, 0, 1};
  o.ring = {0x1112131415161718, 0x2122232425262728, 1 << 20};
  o.credit_box = {0x4142434445464748, 0x5152535455565758, 64};
  return o;
}

// Byte offsets of the RDMA offer's provider length and address length.
constexpr size_t kProviderLengthAt = 8;
constexpr size_t kAddressLengthAt = 9 + kRdmaProviderMax;

TEST(WireFormat, RdmaOfferEncodesToItsGoldenBytesAndBack) {
  const RdmaOffer o = golden_rdma_offer();
  const std::string hex = std::string("50435232")                        // magic "PCR2"
                          + "01000000"                                   // offered
                          + "0b" + "7463703b6f66695f72786d" + zeros(20)  // provider
                          + "0800" + "02004e207f000001" + zeros(248)     // address
                          + "1817161514131211" + "2827262524232221"      // ring address, key
                          + "0000100000000000"                           // ring size
                          + "4847464544434241" + "5857565554535251"      // box address, key
                          + "4000000000000000";                          // box size
  EXPECT_EQ(to_hex(encode_rdma_offer(o)), hex);
  const RdmaOffer back = parse_rdma_offer(golden(hex));
  EXPECT_TRUE(back.offered);
  EXPECT_EQ(back.provider, o.provider);
  EXPECT_EQ(back.address, o.address);
  for (auto region : {&RdmaOffer::ring, &RdmaOffer::credit_box}) {
    EXPECT_EQ((back.*region).address, (o.*region).address);
    EXPECT_EQ((back.*region).key, (o.*region).key);
    EXPECT_EQ((back.*region).size, (o.*region).size);
  }
}

TEST(WireFormat, RdmaOfferProviderIsOneToThirtyOneCharactersOfAZ09UnderscoreSemicolon) {
  RdmaOffer o = golden_rdma_offer();
  for (const std::string& provider : {std::string("psm3"), std::string(kRdmaProviderMax, 'a')}) {
    o.provider = provider;
    EXPECT_EQ(parse_rdma_offer(encode_rdma_offer(o)).provider, provider);
  }
  o.provider = "";
  expect_refused([&] { parse_rdma_offer(encode_rdma_offer(o)); }, "provider name length 0");
  Bytes too_long = encode_rdma_offer(golden_rdma_offer());
  put_le(too_long, kProviderLengthAt, kRdmaProviderMax + 1, 1);
  expect_refused([&] { parse_rdma_offer(too_long); }, "provider name length 32");
  o.provider = "tcp-rxm";
  expect_refused([&] { parse_rdma_offer(encode_rdma_offer(o)); }, "outside [a-z0-9_;]");
  o.provider = std::string(kRdmaProviderMax + 1, 'a');
  expect_refused([&] { encode_rdma_offer(o); }, "too long", StatusCode::kInvalidArgument);
}

TEST(WireFormat, RdmaOfferAddressIsOneTo256Bytes) {
  RdmaOffer o = golden_rdma_offer();
  o.address.assign(kRdmaAddressMax, 0xab);
  EXPECT_EQ(parse_rdma_offer(encode_rdma_offer(o)).address, o.address);
  Bytes too_long = encode_rdma_offer(o);
  put_le(too_long, kAddressLengthAt, kRdmaAddressMax + 1, 2);
  expect_refused([&] { parse_rdma_offer(too_long); }, "address length 257");
  o.address.push_back(0);
  expect_refused([&] { encode_rdma_offer(o); }, "too long", StatusCode::kInvalidArgument);
}

TEST(WireFormat, RdmaOfferRingIsAPowerOfTwoUpToTheLargestRing) {
  RdmaOffer o = golden_rdma_offer();
  o.ring.size = kMaxShmRingBytes;
  EXPECT_EQ(parse_rdma_offer(encode_rdma_offer(o)).ring.size, kMaxShmRingBytes);
  for (uint64_t size : {uint64_t{0}, 2 * kMaxShmRingBytes}) {
    o.ring.size = size;
    expect_refused([&] { parse_rdma_offer(encode_rdma_offer(o)); },
                   "ring of " + std::to_string(size) + " bytes");
  }
}

TEST(WireFormat, RdmaOfferCreditBoxIsEightTo4096Bytes) {
  RdmaOffer o = golden_rdma_offer();
  for (uint64_t size : {8, 4096}) {
    o.credit_box.size = size;
    EXPECT_EQ(parse_rdma_offer(encode_rdma_offer(o)).credit_box.size, size);
  }
  for (uint64_t size : {7, 4097}) {
    o.credit_box.size = size;
    expect_refused([&] { parse_rdma_offer(encode_rdma_offer(o)); },
                   "credit box of " + std::to_string(size) + " bytes");
  }
}

// ---- Handshake ---------------------------------------------------------

Hello golden_hello() {
  Hello h;
  h.role = ConnectionRole::kStore;
  for (size_t i = 0; i < h.job.size(); ++i) h.job[i] = static_cast<uint8_t>(0x10 + i);
  h.rank = 0x21;
  h.world = 0x40;
  h.socket_index = kMaxSocketsPerPeer - 1;
  for (size_t i = 0; i < h.nonce.size(); ++i) h.nonce[i] = static_cast<uint8_t>(0x40 + i);
  return h;
}

const std::string kGoldenHello =
    std::string("50434831")                                                // magic "PCH1"
    + "0700"                                                               // wire version
    + "0200"                                                               // role: store
    + "101112131415161718191a1b1c1d1e1f"                                   // job
    + "21000000"                                                           // rank
    + "40000000"                                                           // world
    + "0f000000"                                                           // socket index
    + "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f";  // nonce

// Byte offsets of the Hello's version, role, rank, world and socket index.
constexpr size_t kHelloVersionAt = 4, kRoleAt = 6, kRankAt = 24, kWorldAt = 28, kSocketAt = 32;

TEST(WireFormat, HelloEncodesToItsGoldenBytesAndBack) {
  const Hello g = golden_hello();
  EXPECT_EQ(to_hex(encode_hello(g)), kGoldenHello);
  const Hello h = parse_hello(golden(kGoldenHello));
  EXPECT_EQ(h.role, g.role);
  EXPECT_EQ(h.job, g.job);
  EXPECT_EQ(h.rank, g.rank);
  EXPECT_EQ(h.world, g.world);
  EXPECT_EQ(h.socket_index, g.socket_index);
  EXPECT_EQ(h.nonce, g.nonce);
}

// The golden Hello with the field at `offset` overwritten.
Bytes hello_with(size_t offset, uint64_t value, size_t width) {
  Bytes bytes = golden(kGoldenHello);
  put_le(bytes, offset, value, width);
  return bytes;
}

TEST(WireFormat, HelloRefusesAnUnknownVersionOrRole) {
  expect_refused([] { parse_hello(hello_with(kHelloVersionAt, kWireVersion + 1, 2)); },
                 "wire version " + std::to_string(kWireVersion + 1));
  for (uint16_t role : {0, 3}) {
    expect_refused([&] { parse_hello(hello_with(kRoleAt, role, 2)); },
                   "unknown role " + std::to_string(role));
  }
}

TEST(WireFormat, HelloWorldRankAndSocketStayInRange) {
  Bytes largest = hello_with(kWorldAt, kMaxWorld, 4);
  put_le(largest, kRankAt, kMaxWorld - 1, 4);
  EXPECT_EQ(parse_hello(largest).rank, kMaxWorld - 1);
  for (uint32_t world : {0u, kMaxWorld + 1}) {
    expect_refused([&] { parse_hello(hello_with(kWorldAt, world, 4)); },
                   "world size " + std::to_string(world) + " out of range");
  }
  expect_refused([] { parse_hello(hello_with(kRankAt, 0x40, 4)); }, "rank 64 >= world size 64");
  expect_refused([] { parse_hello(hello_with(kSocketAt, kMaxSocketsPerPeer, 4)); },
                 "socket index 16 out of range");
}

TEST(WireFormat, ChallengeAndResponseEncodeToTheirGoldenBytesAndAreExactlyThatLong) {
  Challenge c;
  for (size_t i = 0; i < c.nonce.size(); ++i) {
    c.nonce[i] = static_cast<uint8_t>(0x80 + i);
    c.proof[i] = static_cast<uint8_t>(0xa0 + i);
  }
  const std::string nonce = "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f";
  const std::string proof = "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf";
  const Bytes challenge = golden("50434331" + nonce + proof);  // "PCC1"
  const Bytes response = golden("50435231" + proof);           // "PCR1"
  EXPECT_EQ(encode_challenge(c), challenge);
  EXPECT_EQ(encode_response(c.proof), response);
  EXPECT_EQ(parse_challenge(challenge).nonce, c.nonce);
  EXPECT_EQ(parse_challenge(challenge).proof, c.proof);
  EXPECT_EQ(parse_response(response), c.proof);
  const std::pair<Bytes, std::function<void(std::span<const uint8_t>)>> messages[] = {
      {challenge, [](std::span<const uint8_t> b) { parse_challenge(b); }},
      {response, [](std::span<const uint8_t> b) { parse_response(b); }}};
  for (const auto& [message, parse] : messages) {
    expect_refused([&] { parse(std::span(message).first(message.size() - 1)); }, "truncated");
    Bytes longer = message;
    longer.push_back(0);
    expect_refused([&] { parse(longer); }, "1 unexpected trailing bytes");
  }
}

// Both sides of every build must compute the same proofs: label, Hello and
// acceptor nonce, in that order, under HMAC-SHA256.
TEST(WireFormat, HandshakeProofsMatchTheirGoldenDigests) {
  const std::string secret = "s3cret";
  const std::span<const uint8_t> key(reinterpret_cast<const uint8_t*>(secret.data()),
                                     secret.size());
  Nonce nonce;
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(0x80 + i);
  const Bytes hello = golden(kGoldenHello);
  EXPECT_EQ(to_hex(acceptor_proof(key, hello, nonce)),
            "0e8030f914e4af1ddc0e85a5429dc9f88add288ac482815c5f0559e1d83e634a");
  EXPECT_EQ(to_hex(connector_proof(key, hello, nonce)),
            "eb939b4c70128a3929a7e9c36edf06dc8d57102dcfc9a8ef45e8d6e6807ec311");
}

// ---- Store requests and peer records -----------------------------------

TEST(WireFormat, StoreRequestEncodesToItsGoldenBytesAndBack) {
  const StoreRequest r{StoreOp::kSet, "k1", {1, 2, 3}};
  const std::string hex = std::string("01")         // op: set
                          + "02000000" + "6b31"     // key
                          + "03000000" + "010203";  // value
  EXPECT_EQ(to_hex(encode_store_request(r)), hex);
  const StoreRequest back = parse_store_request(golden(hex));
  EXPECT_EQ(back.op, r.op);
  EXPECT_EQ(back.key, r.key);
  EXPECT_EQ(back.value, r.value);
}

TEST(WireFormat, StoreRequestKeyAndValueTakeTheirLimitsButNoMore) {
  StoreRequest r{StoreOp::kSet, std::string(kMaxStoreKey, 'k'), Bytes(kMaxStoreValue, 7)};
  const StoreRequest back = parse_store_request(encode_store_request(r));
  EXPECT_EQ(back.key, r.key);
  EXPECT_EQ(back.value, r.value);
  r.key.push_back('k');
  expect_refused([&] { parse_store_request(encode_store_request(r)); }, "length 257 exceeds 256");
  r.key = "k";
  r.value.push_back(7);
  expect_refused([&] { parse_store_request(encode_store_request(r)); },
                 "value of 65537 bytes exceeds 65536");
}

TEST(WireFormat, StoreRequestOpsAreSetGetAndAddWithTheirValues) {
  for (uint8_t op : {0, 4}) {
    Bytes body = encode_store_request({StoreOp::kSet, "k", {}});
    body[0] = op;
    expect_refused([&] { parse_store_request(body); }, "unknown op " + std::to_string(op));
  }
  EXPECT_TRUE(parse_store_request(encode_store_request({StoreOp::kSet, "k", {}})).value.empty());
  EXPECT_EQ(parse_store_request(encode_store_request({StoreOp::kGet, "k", {}})).op, StoreOp::kGet);
  expect_refused(
      [] {
        parse_store_request(encode_store_request({StoreOp::kGet, "k", {1}}));
      },
      "get carries no value");
  EXPECT_EQ(parse_store_request(encode_store_request({StoreOp::kAdd, "k", Bytes(8)})).op,
            StoreOp::kAdd);
  for (size_t size : {7, 9}) {
    expect_refused(
        [&] {
          parse_store_request(encode_store_request({StoreOp::kAdd, "k", Bytes(size)}));
        },
        "add needs an 8-byte increment, got " + std::to_string(size));
  }
}

PeerInfo golden_peer() {
  return {0x01020304, "h", "10.0.0.1", 0x1234, "sim.faithful", "sim", 0x0a0b0c0d};
}

TEST(WireFormat, PeerRecordEncodesToItsGoldenBytesAndBack) {
  const PeerInfo p = golden_peer();
  const std::string hex = std::string("50434931")                    // magic "PCI1"
                          + "04030201"                               // rank
                          + "01000000" + "68"                        // host
                          + "08000000" + "31302e302e302e31"          // address
                          + "3412"                                   // port
                          + "0c000000" + "73696d2e666169746866756c"  // device type
                          + "03000000" + "73696d"                    // vendor
                          + "0d0c0b0a";                              // pid
  EXPECT_EQ(to_hex(encode_peer_info(p)), hex);
  const PeerInfo back = parse_peer_info(golden(hex));
  EXPECT_EQ(back.rank, p.rank);
  EXPECT_EQ(back.host, p.host);
  EXPECT_EQ(back.address, p.address);
  EXPECT_EQ(back.port, p.port);
  EXPECT_EQ(back.device_type, p.device_type);
  EXPECT_EQ(back.vendor, p.vendor);
  EXPECT_EQ(back.pid, p.pid);
}

// Every text field of a peer record, with its longest length.
struct TextField {
  std::string PeerInfo::*field;
  size_t max;
};
constexpr TextField kPeerText[] = {{&PeerInfo::host, 255},
                                   {&PeerInfo::address, 64},
                                   {&PeerInfo::device_type, 128},
                                   {&PeerInfo::vendor, 128}};

TEST(WireFormat, PeerRecordTextFieldsTakeTheirLongestLengthButNoMore) {
  for (const TextField& t : kPeerText) {
    PeerInfo p = golden_peer();
    p.*t.field = std::string(t.max, 'x');
    EXPECT_EQ(parse_peer_info(encode_peer_info(p)).*t.field, p.*t.field);
    (p.*t.field).push_back('x');
    expect_refused([&] { parse_peer_info(encode_peer_info(p)); },
                   "length " + std::to_string(t.max + 1) + " exceeds " + std::to_string(t.max));
  }
}

// Spaces and '~' are printable; below ' ' and DEL are control characters.
TEST(WireFormat, PeerRecordTextFieldsRefuseControlCharactersEach) {
  for (const TextField& t : kPeerText) {
    PeerInfo p = golden_peer();
    p.*t.field = " a~";
    EXPECT_EQ(parse_peer_info(encode_peer_info(p)).*t.field, " a~");
    for (char control : {'\x1f', '\x7f'}) {
      p.*t.field = std::string("a") + control;
      expect_refused([&] { parse_peer_info(encode_peer_info(p)); }, "control characters");
    }
  }
}

TEST(WireFormat, PeerRecordNeedsAPortAndAnAddress) {
  PeerInfo p = golden_peer();
  p.port = 0;
  expect_refused([&] { parse_peer_info(encode_peer_info(p)); }, "port 0");
  p = golden_peer();
  p.address.clear();
  expect_refused([&] { parse_peer_info(encode_peer_info(p)); }, "empty address");
}

// ---- Hex ---------------------------------------------------------------

TEST(WireFormat, HexTakesBothCasesAndRefusesTheCharactersBesideTheDigits) {
  const Bytes bytes = {0x00, 0x09, 0x0a, 0x9f, 0xa0, 0xff};
  EXPECT_EQ(to_hex(bytes), "00090a9fa0ff");
  EXPECT_EQ(from_hex("00090a9fA0FF", "hex"), bytes);
  EXPECT_EQ(from_hex("aFAf", "hex"), (Bytes{0xaf, 0xaf}));
  for (char outside : {'/', ':', '`', 'g', '@', 'G'}) {
    expect_refused([&] { from_hex(std::string("0000") + outside + "0", "hex"); },
                   "hex: not a hex digit at position 4", StatusCode::kInvalidArgument);
  }
  expect_refused([] { from_hex("abc", "hex"); }, "odd length 3", StatusCode::kInvalidArgument);
}

}  // namespace
