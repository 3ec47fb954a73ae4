// Single-process tests of the comm building blocks: hashes, CRC, dtype
// conversions, the wire parsers (valid, corrupted, truncated, corpus), the
// authenticated handshake over real sockets, and communicators whose ranks
// are threads of this process.
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <barrier>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "algorithms/plan.hpp"
#include "algorithms/reduce_kernels.hpp"
#include "bootstrap/store.hpp"
#include "polychip/comm/bootstrap.hpp"
#include "polychip/comm/case_runner.hpp"
#include "polychip/comm/comm.h"
#include "polychip/comm/communicator.hpp"
#include "polychip/dtype.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"
#include "security/handshake.hpp"
#include "security/hmac_sha256.hpp"
#include "staging/staging.hpp"
#include "transport/hang_report.hpp"
#include "transport/rdma/rma_ring.hpp"
#include "transport/shm/shm_ring.hpp"
#include "transport/tcp/socket.hpp"
#include "transport/tcp/socket_inbox.hpp"
#include "transport/transport.hpp"
#include "wire/crc32c.hpp"
#include "wire/wire.hpp"

using namespace polychip;
using namespace polychip::comm;

namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(Sha256, MatchesFips180Vector) {
  EXPECT_EQ(to_hex(sha256(bytes_of("abc"))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(sha256(bytes_of(std::string(1000, 'a')))),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(HmacSha256, MatchesRfc4231Vectors) {
  EXPECT_EQ(to_hex(hmac_sha256(bytes_of("Jefe"), bytes_of("what do ya want for nothing?"))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  std::string long_key(131, '\xaa');
  EXPECT_EQ(to_hex(hmac_sha256(bytes_of(long_key),
                               bytes_of("Test Using Larger Than Block-Size Key - Hash Key First"))),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(Crc32c, MatchesCheckValueAndIsIncremental) {
  EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);
  uint32_t c = crc32c_extend(0, "1234", 4);
  EXPECT_EQ(crc32c_extend(c, "56789", 5), 0xe3069283u);
}

TEST(Conversions, HalfAndBfloat16AgreeWithTheHal) {
  for (uint32_t b = 0; b < 65536; ++b) {
    uint16_t h = static_cast<uint16_t>(b);
    float ours = half_bits_to_float(h), hal = f16_bits_to_f32(h);
    if (std::isnan(hal)) {
      EXPECT_TRUE(std::isnan(ours));
    } else {
      EXPECT_EQ(ours, hal) << std::hex << b;
    }
    float ours_bf = bfloat16_bits_to_float(h), hal_bf = bf16_bits_to_f32(h);
    if (!std::isnan(hal_bf)) {
      EXPECT_EQ(ours_bf, hal_bf) << std::hex << b;
    }
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = bits(rng);
    if (i % 4 == 0) u = (u & 0x87ffffffu) | 0x38000000u;  // near the f16 range
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half_bits(f), f64_to_f16_bits(f)) << std::hex << u;
    ASSERT_EQ(float_to_bfloat16_bits(f), f64_to_bf16_bits(f)) << std::hex << u;
  }
}

TEST(ReduceKernels, AverageRoundsOnceAndIntegersTruncate) {
  int32_t acc[3] = {-7, 7, 9};
  int32_t out[3];
  finalize_reduction(acc, DType::kI32, out, DType::kI32, 3, ReduceOp::kAvg, 2);
  EXPECT_EQ(out[0], -3);
  EXPECT_EQ(out[1], 3);
  EXPECT_EQ(out[2], 4);
  float facc[1] = {3.0f};
  uint16_t h[1];
  finalize_reduction(facc, DType::kF32, h, DType::kF16, 1, ReduceOp::kAvg, 2);
  EXPECT_EQ(h[0], f64_to_f16_bits(1.5));
}

FrameHeader sample_header() {
  FrameHeader h;
  h.kind = FrameKind::kCollective;
  h.flags = kFlagPayloadCrc;
  h.seq = 42;
  h.step = 3;
  h.chunk = 9;
  h.payload_bytes = 1 << 20;
  h.payload_crc = 0xdeadbeef;
  h.source_rank = 5;
  h.call = {.collective = 5,
            .dtype = static_cast<uint8_t>(DType::kBF16),
            .op = 3,
            .root = 2,
            .count = uint64_t{1} << 40};
  return h;
}

TEST(Wire, FrameHeaderRoundTrips) {
  uint8_t buf[kFrameHeaderSize];
  encode_frame_header(sample_header(), buf);
  FrameHeader h = parse_frame_header({buf, kFrameHeaderSize}, 5);
  EXPECT_EQ(h.seq, 42u);
  EXPECT_EQ(h.step, 3u);
  EXPECT_EQ(h.chunk, 9u);
  EXPECT_EQ(h.payload_bytes, 1u << 20);
  EXPECT_EQ(h.payload_crc, 0xdeadbeefu);
  EXPECT_EQ(h.call, sample_header().call);
  EXPECT_EQ(describe_call(h.call), "reduce(bf16, count 1099511627776, op max, root 2)");
}

void expect_corrupt(const std::function<void()>& f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDataCorruption) << what << ": " << e.what();
  }
}

// A collective frame must say which call it belongs to; other frames must not.
TEST(Wire, OnlyCollectiveFramesCarryACallSignature) {
  uint8_t buf[kFrameHeaderSize];
  FrameHeader h = sample_header();
  h.call.collective = 0;
  encode_frame_header(h, buf);
  expect_corrupt([&] { parse_frame_header({buf, kFrameHeaderSize}, 5); }, "no call");
  h = sample_header();
  h.kind = FrameKind::kPointToPoint;
  encode_frame_header(h, buf);
  expect_corrupt([&] { parse_frame_header({buf, kFrameHeaderSize}, 5); }, "p2p with a call");
  h = sample_header();
  h.call.op = 5;
  encode_frame_header(h, buf);
  expect_corrupt([&] { parse_frame_header({buf, kFrameHeaderSize}, 5); }, "unknown op");
}

TEST(Wire, EveryCorruptedTruncatedOrMisattributedHeaderIsRejected) {
  uint8_t good[kFrameHeaderSize];
  encode_frame_header(sample_header(), good);
  for (size_t i = 0; i < kFrameHeaderSize; ++i) {
    for (uint8_t flip : {uint8_t{1}, uint8_t{0x80}}) {
      uint8_t bad[kFrameHeaderSize];
      std::memcpy(bad, good, sizeof(bad));
      bad[i] ^= flip;
      expect_corrupt(
          [&] {
            parse_frame_header({bad, kFrameHeaderSize}, 5);
          },
          "byte " + std::to_string(i));
    }
  }
  for (size_t n = 0; n < kFrameHeaderSize; ++n) {
    expect_corrupt([&] { parse_frame_header({good, n}, 5); }, "truncated");
  }
  expect_corrupt([&] { parse_frame_header({good, kFrameHeaderSize}, 4); }, "wrong source");
  FrameHeader huge = sample_header();
  huge.payload_bytes = kMaxFramePayload + 1;
  uint8_t buf[kFrameHeaderSize];
  encode_frame_header(huge, buf);
  expect_corrupt([&] { parse_frame_header({buf, kFrameHeaderSize}, 5); }, "oversized payload");
}

TEST(Wire, HelloStoreAndPeerRecordsValidateFields) {
  Hello h;
  h.rank = 3;
  h.world = 4;
  auto bytes = encode_hello(h);
  EXPECT_EQ(parse_hello(bytes).rank, 3u);
  auto bad = bytes;
  bad[bad.size() - 33 - 8] = 9;  // rank 9 >= world 4 (rank field, little endian)
  expect_corrupt([&] { parse_hello(bad); }, "rank >= world");
  expect_corrupt([&] { parse_hello({bytes.data(), bytes.size() - 1}); }, "short hello");
  StoreRequest req{StoreOp::kSet, "peer/1", {1, 2, 3}};
  auto body = encode_store_request(req);
  EXPECT_EQ(parse_store_request(body).key, "peer/1");
  body[1] = 0xff;  // key length far beyond the body
  expect_corrupt([&] { parse_store_request(body); }, "store key length");
  PeerInfo p{1, "host", "10.0.0.1", 1234, "sim.faithful", "sim", 77};
  auto rec = encode_peer_info(p);
  EXPECT_EQ(parse_peer_info(rec).device_type, "sim.faithful");
  rec.push_back(0);
  expect_corrupt([&] { parse_peer_info(rec); }, "trailing byte");
}

// Files in tests/corpus: first byte picks the parser, the rest is the input;
// every one of them is malformed and must be rejected cleanly.
TEST(Wire, MalformedCorpusIsRejected) {
  DIR* dir = opendir(POLYCHIP_COMM_CORPUS_DIR);
  ASSERT_NE(dir, nullptr) << POLYCHIP_COMM_CORPUS_DIR;
  int files = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string(POLYCHIP_COMM_CORPUS_DIR) + "/" + e->d_name, std::ios::binary);
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
    ASSERT_FALSE(data.empty()) << e->d_name;
    std::span<const uint8_t> input(data.data() + 1, data.size() - 1);
    ++files;
    expect_corrupt(
        [&] {
          switch (data[0]) {
            case 'f':
              parse_frame_header(input, 0);
              break;
            case 'h':
              parse_hello(input);
              break;
            case 'c':
              parse_challenge(input);
              break;
            case 'r':
              parse_response(input);
              break;
            case 's':
              parse_store_request(input);
              break;
            case 'p':
              parse_peer_info(input);
              break;
            case 'o':
              parse_shm_offer(input);
              break;
            case 'a':
              parse_shm_reply(input);
              break;
            case 'R':
              parse_rdma_offer(input);
              break;
            case 'A':
              parse_rdma_reply(input);
              break;
            case 'P':
              parse_placement_offers(input);
              break;
            default:
              throw_error(StatusCode::kDataCorruption, "unknown selector");
          }
        },
        e->d_name);
  }
  closedir(dir);
  EXPECT_GE(files, 10);
}

void expect_error(const std::function<void()>& call, StatusCode code, const std::string& what) {
  try {
    call();
    ADD_FAILURE() << "passed; expected an error naming \"" << what << "\"";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

struct SocketPair {
  Fd a, b;
  SocketPair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    a = Fd(fds[0]);
    b = Fd(fds[1]);
  }
};

TEST(Wire, DoorbellsCarryNoPayloadAndShmOffersRoundTrip) {
  FrameHeader bell;
  bell.kind = FrameKind::kDoorbell;
  uint8_t bytes[kFrameHeaderSize];
  encode_frame_header(bell, bytes);
  EXPECT_EQ(parse_frame_header(bytes, 0).kind, FrameKind::kDoorbell);
  bell.payload_bytes = 8;
  encode_frame_header(bell, bytes);
  expect_corrupt([&] { parse_frame_header(bytes, 0); }, "doorbell with payload");

  ShmOffer offer;
  offer.offered = true;
  offer.capacity = 1 << 20;
  offer.token[3] = 7;
  offer.name = "/polychip-0123abcd";
  std::vector<uint8_t> encoded = encode_shm_offer(offer);
  ASSERT_EQ(encoded.size(), kShmOfferSize);
  ShmOffer back = parse_shm_offer(encoded);
  EXPECT_TRUE(back.offered);
  EXPECT_EQ(back.capacity, offer.capacity);
  EXPECT_EQ(back.token, offer.token);
  EXPECT_EQ(back.name, offer.name);
  EXPECT_FALSE(parse_shm_offer(encode_shm_offer(ShmOffer{})).offered);
  EXPECT_TRUE(parse_shm_reply(encode_shm_reply(true)));
  EXPECT_FALSE(parse_shm_reply(encode_shm_reply(false)));
}

TEST(Wire, RdmaOffersRoundTripAndRefuseWhatCannotBeAnOffer) {
  RdmaOffer offer;
  offer.offered = true;
  offer.provider = "tcp;ofi_rxm";
  offer.address = {2, 0, 0x4e, 0x20, 127, 0, 0, 1};
  offer.ring = {0x7f0000001000, 42, 1 << 20};
  offer.credit_box = {0x7f0000201000, 43, 64};
  std::vector<uint8_t> encoded = encode_rdma_offer(offer);
  ASSERT_EQ(encoded.size(), kRdmaOfferSize);
  RdmaOffer back = parse_rdma_offer(encoded);
  EXPECT_TRUE(back.offered);
  EXPECT_EQ(back.provider, offer.provider);
  EXPECT_EQ(back.address, offer.address);
  EXPECT_EQ(back.ring.key, 42u);
  EXPECT_EQ(back.credit_box.address, offer.credit_box.address);
  EXPECT_FALSE(parse_rdma_offer(encode_rdma_offer(RdmaOffer{})).offered);
  EXPECT_TRUE(parse_rdma_reply(encode_rdma_reply(true)));
  EXPECT_FALSE(parse_rdma_reply(encode_rdma_reply(false)));
  RdmaOffer odd = offer;
  odd.ring.size = 3 << 20;
  expect_corrupt([&] { parse_rdma_offer(encode_rdma_offer(odd)); }, "ring not a power of two");
  odd = offer;
  odd.provider = "Verbs";
  expect_corrupt([&] { parse_rdma_offer(encode_rdma_offer(odd)); }, "provider name");
  odd = offer;
  odd.address.clear();
  expect_corrupt([&] { parse_rdma_offer(encode_rdma_offer(odd)); }, "empty address");
  expect_corrupt([&] { parse_shm_reply(encode_rdma_reply(true)); }, "reply of the other kind");
}

TEST(RmaNotice, CarriesRankSequenceKindAndCountInThirtyTwoBits) {
  using K = RmaNoticeKind;
  for (const RmaNotice n :
       {RmaNotice{0, K::kData, 1, 0}, RmaNotice{1023, K::kCredit, uint32_t(kRmaMaxWriteBytes), 3},
        RmaNotice{7, K::kPlaced, uint32_t(kRmaMaxWriteBytes), 2},
        RmaNotice{512, K::kPlaced, 4097, 1}}) {
    const uint64_t immediate = encode_rma_notice(n);
    EXPECT_LT(immediate, uint64_t{1} << 32);
    const RmaNotice back = decode_rma_notice(immediate);
    EXPECT_EQ(back.rank, n.rank);
    EXPECT_EQ(back.kind, n.kind);
    EXPECT_EQ(back.bytes, n.bytes);
    EXPECT_EQ(back.seq, n.seq);
  }
  expect_corrupt([&] { decode_rma_notice(uint64_t{1} << 32); }, "bits above 32");
  expect_corrupt([&] { decode_rma_notice(uint64_t{3} << 18); }, "a fourth kind");
  EXPECT_THROW(encode_rma_notice({kRmaMaxRanks, K::kData, 1}), Error);
  EXPECT_THROW(encode_rma_notice({0, K::kData, 1, uint32_t(kRmaWritesInFlight)}), Error);
  EXPECT_THROW(encode_rma_notice({0, K::kData, 0}), Error);
  EXPECT_THROW(encode_rma_notice({0, K::kData, uint32_t(kRmaMaxWriteBytes) + 1}), Error);
}

TEST(PlacementOffers, RoundTripAndMalformedOnesAreRefused) {
  const std::vector<PlacementOffer> offers = {{3, 0, {0x7f0000001000, 42, 1 << 20}},
                                              {4, 17, {4096, 7, 65536}}};
  const std::vector<uint8_t> bytes = encode_placement_offers(offers);
  ASSERT_EQ(bytes.size(), 2 * kPlacementOfferBytes);
  const std::vector<PlacementOffer> back = parse_placement_offers(bytes);
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].step, offers[i].step);
    EXPECT_EQ(back[i].chunk, offers[i].chunk);
    EXPECT_EQ(back[i].region.address, offers[i].region.address);
    EXPECT_EQ(back[i].region.key, offers[i].region.key);
    EXPECT_EQ(back[i].region.size, offers[i].region.size);
  }
  expect_corrupt([&] { parse_placement_offers({}); }, "no offer");
  expect_corrupt([&] { parse_placement_offers(std::span(bytes).first(bytes.size() - 1)); },
                 "a truncated offer");
  std::vector<PlacementOffer> empty_region = {{0, 0, {4096, 1, 0}}};
  expect_corrupt([&] { parse_placement_offers(encode_placement_offers(empty_region)); },
                 "an empty region");
  std::vector<PlacementOffer> huge = {{0, 0, {4096, 1, kMaxFramePayload + 1}}};
  expect_corrupt([&] { parse_placement_offers(encode_placement_offers(huge)); },
                 "a region larger than a frame");
  std::vector<PlacementOffer> many(kMaxPlacementOffers + 1, offers[0]);
  expect_corrupt([&] { parse_placement_offers(encode_placement_offers(many)); }, "too many offers");

  // The frame that carries them, and the placed flag.
  FrameHeader h;
  h.kind = FrameKind::kPlacement;
  h.seq = 9;
  h.payload_bytes = bytes.size();
  h.source_rank = 1;
  uint8_t header[kFrameHeaderSize];
  encode_frame_header(h, header);
  EXPECT_EQ(parse_frame_header(header, 1).kind, FrameKind::kPlacement);
  for (uint64_t payload : {uint64_t{0}, uint64_t{kPlacementOfferBytes + 1},
                           uint64_t{(kMaxPlacementOffers + 1) * kPlacementOfferBytes}}) {
    h.payload_bytes = payload;
    encode_frame_header(h, header);
    expect_corrupt([&] { parse_frame_header(header, 1); }, "a placement frame's size");
  }
  FrameHeader placed;
  placed.kind = FrameKind::kPointToPoint;
  placed.flags = kFlagPlaced;
  placed.payload_bytes = 1 << 20;
  encode_frame_header(placed, header);
  expect_corrupt([&] { parse_frame_header(header, 0); }, "a placed point-to-point frame");
}

// Another process's view of a ring's segment: a second mapping through which
// a test plays a peer that writes the control block or reads the ring.
class SegmentView {
 public:
  SegmentView(const std::string& name, uint64_t bytes) : bytes_(bytes) {
    int fd = ::shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) return;
    void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map != MAP_FAILED) map_ = map;
  }
  SegmentView(const SegmentView&) = delete;
  SegmentView& operator=(const SegmentView&) = delete;
  ~SegmentView() {
    if (map_) ::munmap(map_, bytes_);
  }
  bool mapped() const { return map_ != nullptr; }
  ShmRingControl* control() const { return static_cast<ShmRingControl*>(map_); }
  uint8_t* ring() const { return static_cast<uint8_t*>(map_) + kShmRingControlBytes; }

 private:
  void* map_ = nullptr;
  uint64_t bytes_;
};

bool segment_exists(const std::string& name) {
  int fd = ::shm_open(name.c_str(), O_RDONLY, 0);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

TEST(ShmRing, BytesCrossTheWrapInOrder) {
  ShmRing rx = ShmRing::create(4096);
  ShmRing tx = ShmRing::open(rx.name(), rx.token(), 4096);
  std::mt19937 rng(3);
  std::vector<uint8_t> sent, got;
  uint64_t written = 0;
  // Writes and reads of awkward sizes wrap the ring many times.
  for (int round = 0; round < 200; ++round) {
    std::vector<uint8_t> piece(1 + rng() % 3000);
    for (auto& b : piece) b = static_cast<uint8_t>(rng());
    uint64_t n = tx.write(piece.data(), piece.size());
    sent.insert(sent.end(), piece.begin(), piece.begin() + static_cast<long>(n));
    written += n;
    std::vector<uint8_t> buf(1 + rng() % 3000);
    uint64_t r = rx.read(buf.data(), buf.size());
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<long>(r));
  }
  std::vector<uint8_t> rest(8192);
  got.insert(got.end(), rest.begin(), rest.begin() + static_cast<long>(rx.read(rest.data(), 8192)));
  EXPECT_GT(written, 100000u);
  EXPECT_EQ(got, sent);
  // Full ring: nothing more fits until the reader consumes.
  std::vector<uint8_t> big(5000, 1);
  EXPECT_EQ(tx.write(big.data(), big.size()), 4096u);
  EXPECT_EQ(tx.write(big.data(), 1), 0u);
  const uint8_t* view;
  EXPECT_GT(rx.peek(&view), 0u);
}

TEST(ShmRing, WakeUpFlagsAreTakenOnce) {
  ShmRing rx = ShmRing::create(4096);
  ShmRing tx = ShmRing::open(rx.name(), rx.token(), 4096);
  EXPECT_TRUE(rx.arm_reader());  // empty: the reader may sleep
  EXPECT_EQ(tx.write("abcd", 4), 4u);
  EXPECT_TRUE(tx.take_reader_waiting());  // so the writer rings once
  EXPECT_FALSE(tx.take_reader_waiting());
  EXPECT_FALSE(rx.arm_reader());  // bytes are ready: do not sleep
  std::vector<uint8_t> fill(4092, 0);
  EXPECT_EQ(tx.write(fill.data(), fill.size()), 4092u);
  EXPECT_TRUE(tx.arm_writer());
  char out[16];
  EXPECT_EQ(rx.read(out, sizeof(out)), 16u);
  EXPECT_TRUE(rx.take_writer_waiting());
  EXPECT_FALSE(rx.take_writer_waiting());
  EXPECT_FALSE(tx.arm_writer());
}

// The mailbox beside the ring: one message per sequence number in two
// slots (even, odd), a slot reusable only once its message was taken.
TEST(ShmRing, MailboxHoldsOneMessagePerSlotUntilTaken) {
  ShmRing rx = ShmRing::create(4096);
  ShmRing tx = ShmRing::open(rx.name(), rx.token(), 4096);
  uint8_t out[kShmMailBytes];
  EXPECT_EQ(rx.take_mail(0, out), -1);  // nothing posted yet
  EXPECT_TRUE(rx.arm_mail_reader(0));   // so the reader may sleep
  ASSERT_TRUE(tx.post_mail(0, "seq0", 4));
  EXPECT_TRUE(tx.take_reader_waiting());  // the poster rings once
  EXPECT_FALSE(tx.take_reader_waiting());
  EXPECT_FALSE(rx.arm_mail_reader(0));       // posted: do not sleep
  EXPECT_TRUE(tx.post_mail(1, "seq1!", 5));  // the odd slot is free
  EXPECT_FALSE(tx.post_mail(2, "seq2", 4));  // the even slot still holds seq 0
  EXPECT_TRUE(tx.arm_mail_writer(2));
  EXPECT_EQ(rx.take_mail(2, out), -1);  // a later message is not this one
  ASSERT_EQ(rx.take_mail(0, out), 4);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(out), 4), "seq0");
  EXPECT_TRUE(rx.take_writer_waiting());  // the taker rings the blocked poster
  EXPECT_FALSE(tx.arm_mail_writer(2));
  EXPECT_EQ(rx.take_mail(0, out), -1);  // taken once
  ASSERT_TRUE(tx.post_mail(2, "seq2", 4));
  ASSERT_EQ(rx.take_mail(1, out), 5);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(out), 5), "seq1!");
  ASSERT_EQ(rx.take_mail(2, out), 4);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(out), 4), "seq2");
  // A message that fills the slot exactly is a valid one on both sides.
  std::vector<uint8_t> full(kShmMailBytes);
  for (size_t i = 0; i < full.size(); ++i) full[i] = static_cast<uint8_t>(i);
  ASSERT_TRUE(tx.post_mail(3, full.data(), full.size()));
  ASSERT_EQ(rx.take_mail(3, out), static_cast<int64_t>(kShmMailBytes));
  EXPECT_EQ(std::vector<uint8_t>(out, out + kShmMailBytes), full);
  EXPECT_THROW(tx.post_mail(4, out, kShmMailBytes + 1), Error);
  // A sender that claims more bytes than a slot holds is caught.
  ASSERT_TRUE(tx.post_mail(5, "x", 1));
  SegmentView peer(rx.name(), kShmRingControlBytes);
  ASSERT_TRUE(peer.mapped());
  peer.control()->mail[1].bytes = kShmMailBytes + 1;
  expect_corrupt([&] { rx.take_mail(5, out); }, "mail longer than its slot");
}

TEST(ShmRing, WrongTokenSizeOrCountersAreRejected) {
  ShmRing rx = ShmRing::create(4096);
  ShmRing::Token wrong = rx.token();
  wrong[0] ^= 1;
  try {
    ShmRing::open(rx.name(), wrong, 4096);
    ADD_FAILURE() << "wrong token accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDataCorruption) << e.what();
  }
  try {
    ShmRing::open(rx.name(), rx.token(), 8192);
    ADD_FAILURE() << "wrong size accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDataCorruption) << e.what();
  }
  try {
    ShmRing::open("/polychip-no-such-ring", rx.token(), 4096);
    ADD_FAILURE() << "missing segment opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnavailable) << e.what();
  }
  // A segment whose control block is not the offered ring's, field by field
  // (the token is checked above); the last one also has the wrong size.
  SegmentView peer(rx.name(), kShmRingControlBytes);
  ASSERT_TRUE(peer.mapped());
  ShmRingControl& control = *peer.control();
  const auto open_tampered = [&](auto& field, auto value, uint64_t capacity, const char* what) {
    const auto kept = field;
    field = value;
    expect_corrupt([&] { ShmRing::open(rx.name(), rx.token(), capacity); }, what);
    field = kept;
  };
  open_tampered(control.magic, kShmRingMagic + 1, 4096, "wrong magic");
  open_tampered(control.version, kWireVersion + 1, 4096, "wrong version");
  open_tampered(control.capacity, uint64_t{8192}, 4096, "wrong capacity");
  open_tampered(control.capacity, uint64_t{8192}, 8192, "capacity larger than the segment");
  // A peer that writes a head beyond the capacity is caught, not trusted.
  control.head.store(4097);
  const uint8_t* view;
  expect_corrupt([&] { rx.peek(&view); }, "head beyond capacity");
  rx.unlink();
  EXPECT_FALSE(segment_exists(rx.name())) << "unlink left the name";
}

TEST(ShmRing, CapacityMustBeAPowerOfTwo) {
  for (uint64_t capacity : {uint64_t{0}, uint64_t{3000}, uint64_t{4097}}) {
    try {
      ShmRing::create(capacity);
      ADD_FAILURE() << "capacity " << capacity << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << e.what();
    }
  }
}

// The token the peer must present is random per ring and is the one in the
// segment; the ring's bytes sit right after the control block, where the
// other process looks for them.
TEST(ShmRing, TokenAndBytesLieWhereAnotherProcessLooks) {
  ShmRing rx = ShmRing::create(4096);
  ShmRing other = ShmRing::create(4096);
  EXPECT_NE(rx.token(), ShmRing::Token{});
  EXPECT_NE(rx.token(), other.token());
  ShmRing tx = ShmRing::open(rx.name(), rx.token(), 4096);
  SegmentView peer(rx.name(), kShmRingControlBytes + 4096);
  ASSERT_TRUE(peer.mapped());
  EXPECT_EQ(std::memcmp(peer.control()->token, rx.token().data(), rx.token().size()), 0);
  ASSERT_EQ(tx.write("abcd", 4), 4u);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(peer.ring()), 4), "abcd");
  EXPECT_EQ(peer.control()->head.load(), 4u);
  // The peer appends bytes of its own; the receiver reads them in order.
  std::memcpy(peer.ring() + 4, "efgh", 4);
  peer.control()->head.store(8);
  char out[8];
  ASSERT_EQ(rx.read(out, sizeof(out)), 8u);
  EXPECT_EQ(std::string(out, 8), "abcdefgh");
}

// The transport keeps rings behind pointers (a move); a ring moved over
// another releases that one's segment name.
TEST(ShmRing, AMovedRingKeepsItsSegmentAndReleasesTheOneItReplaces) {
  ShmRing created = ShmRing::create(4096);
  ShmRing moved(std::move(created));
  ShmRing tx = ShmRing::open(moved.name(), moved.token(), 4096);
  char out[4];
  ASSERT_EQ(tx.write("abcd", 4), 4u);
  ASSERT_EQ(moved.read(out, 4), 4u);
  EXPECT_EQ(std::string(out, 4), "abcd");
  ShmRing replaced = ShmRing::create(4096);
  const std::string released = replaced.name();
  replaced = std::move(moved);
  EXPECT_FALSE(segment_exists(released)) << "the replaced ring kept its name";
  ASSERT_EQ(tx.write("efgh", 4), 4u);
  ASSERT_EQ(replaced.read(out, 4), 4u);
  EXPECT_EQ(std::string(out, 4), "efgh");
}

// A rank started with standard input closed gets descriptor 0 from
// shm_open: a valid descriptor, not a failure.
TEST(ShmRing, DescriptorZeroIsAValidSegment) {
  const int saved = ::dup(0);
  ASSERT_GE(saved, 0);
  ::close(0);
  std::string failure;
  try {
    ShmRing rx = ShmRing::create(4096);
    ShmRing tx = ShmRing::open(rx.name(), rx.token(), 4096);
  } catch (const Error& e) {
    failure = e.what();
  }
  ASSERT_EQ(::dup2(saved, 0), 0);
  ::close(saved);
  EXPECT_EQ(failure, "");
}

// One recv() takes what a small frame and the next ones sent; a short read
// means the socket is empty for the rest of the pass; bulk reads bypass it.
// POLYCHIP_COMM_TIMEOUT / certify --timeout may be huge: such a deadline is
// far away, not (as an out-of-range conversion made it) long past.
TEST(Deadline, HugeOrInfiniteSecondsAreFarAwayAndNanOrNegativeAreNow) {
  for (double seconds : {1e300, std::numeric_limits<double>::infinity(), 1e10}) {
    const Deadline d(seconds);
    EXPECT_FALSE(d.expired()) << seconds;
    EXPECT_EQ(d.remaining_ms(1000), 1000) << seconds;
    EXPECT_EQ(d.earlier(1e300).remaining_ms(1000), 1000) << seconds;
  }
  for (double seconds : {-1.0, std::numeric_limits<double>::quiet_NaN(), 0.0})
    EXPECT_EQ(Deadline(seconds).remaining_ms(1000), 0) << seconds;
}

// Whether nothing waits to be read on `fd` (bytes an inbox took are not there).
bool socket_empty(int fd) {
  char byte;
  return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

TEST(SocketInbox, OneReadTakesSmallFramesAndBulkGoesStraightThrough) {
  SocketPair sp;
  auto socket_empty = [&] { return ::socket_empty(sp.b.get()); };
  std::vector<uint8_t> sent(200);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_EQ(::send(sp.a.get(), sent.data(), sent.size(), 0), 200);
  SocketInbox inbox;
  uint8_t got[200] = {};
  ASSERT_EQ(inbox.receive(sp.b.get(), got, 64), 64);  // a "header"
  EXPECT_TRUE(socket_empty()) << "the first read took everything sent";
  EXPECT_TRUE(inbox.holds_bytes());
  ASSERT_EQ(inbox.receive(sp.b.get(), got + 64, 8), 8);
  ASSERT_EQ(inbox.receive(sp.b.get(), got + 72, 1000), 128) << "what is held, no more";
  EXPECT_EQ(std::memcmp(got, sent.data(), sent.size()), 0);
  EXPECT_FALSE(inbox.holds_bytes());

  // The read was short: in this pass the socket is not asked again.
  ASSERT_EQ(::send(sp.a.get(), sent.data(), 10, 0), 10);
  errno = 0;
  EXPECT_EQ(inbox.receive(sp.b.get(), got, 64), -1);
  EXPECT_EQ(errno, EAGAIN);
  inbox.new_pass();
  EXPECT_EQ(inbox.receive(sp.b.get(), got, 64), 10);

  // A bulk read with nothing held goes straight into the caller's buffer.
  std::vector<uint8_t> bulk(SocketInbox::kDirectBytes * 2, 0x5a), into(bulk.size());
  ASSERT_EQ(::send(sp.a.get(), bulk.data(), bulk.size(), 0), static_cast<ssize_t>(bulk.size()));
  inbox.new_pass();
  EXPECT_EQ(inbox.receive(sp.b.get(), into.data(), into.size()), static_cast<ssize_t>(into.size()));
  EXPECT_FALSE(inbox.holds_bytes());
  EXPECT_EQ(into, bulk);

  sp.a = Fd();  // the peer closes: end of stream, as recv() says it
  inbox.new_pass();
  EXPECT_EQ(inbox.receive(sp.b.get(), got, 64), 0);
}

// Only a short read says the socket is empty: after a read that filled the
// inbox the socket is asked again in the same pass. A read of exactly
// kDirectBytes is bulk and goes straight through.
TEST(SocketInbox, AFullInboxAsksTheSocketAgainAndDirectBytesIsBulk) {
  SocketPair sp;
  std::vector<uint8_t> sent(SocketInbox::kCapacity + 100), got(sent.size());
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<uint8_t>(i * 13 + 5);
  ASSERT_EQ(::send(sp.a.get(), sent.data(), sent.size(), 0), static_cast<ssize_t>(sent.size()));
  SocketInbox inbox;
  inbox.new_pass();
  size_t at = 0;
  while (at < sent.size()) {
    const ssize_t n = inbox.receive(sp.b.get(), got.data() + at, 64);
    ASSERT_GT(n, 0) << "at byte " << at << " of " << sent.size();
    at += static_cast<size_t>(n);
  }
  EXPECT_EQ(got, sent);

  std::vector<uint8_t> bulk(SocketInbox::kDirectBytes * 2, 0x3c);
  ASSERT_EQ(::send(sp.a.get(), bulk.data(), bulk.size(), 0), static_cast<ssize_t>(bulk.size()));
  inbox.new_pass();
  EXPECT_EQ(inbox.receive(sp.b.get(), got.data(), SocketInbox::kDirectBytes),
            static_cast<ssize_t>(SocketInbox::kDirectBytes));
  EXPECT_FALSE(inbox.holds_bytes());
  EXPECT_FALSE(socket_empty(sp.b.get())) << "the read took more than it was asked for";
}

// A cancellable deadline waits in slices short enough to see its flag, and
// once the flag is raised it has passed, also for the deadlines made from it.
TEST(Deadline, ACancellableDeadlineWaitsInShortSlicesAndEndsWhenCancelled) {
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  const Deadline d(10, cancel);
  EXPECT_EQ(d.remaining_ms(1000), Deadline::kCancelPollMs);
  EXPECT_EQ(d.remaining_ms(10), 10);
  EXPECT_FALSE(d.expired());
  cancel->store(true);
  EXPECT_TRUE(d.expired());
  EXPECT_EQ(d.remaining_ms(1000), 0);
  EXPECT_TRUE(d.earlier(10).expired());
  EXPECT_TRUE(Deadline(10).earlier(0).expired());
  EXPECT_TRUE(Deadline(0).earlier(10).expired());
}

// What the socket helpers promise of the descriptors they return: a
// connection is blocking until set otherwise (and no other descriptor's
// flags change), bulk sockets send at once (TCP_NODELAY), each end names
// its address, a listener on "" takes any.
TEST(Socket, LoopbackConnectionsAreBlockingUntilToldAndNameTheirEnds) {
  auto [listener, port] = listen_tcp("127.0.0.1", 0);
  EXPECT_NE(port, 0);
  EXPECT_EQ(local_address(listener.get()), "127.0.0.1");
  EXPECT_EQ(peer_address(listener.get()), "?") << "a listener has no peer";
  const int stdout_flags = ::fcntl(STDOUT_FILENO, F_GETFL);
  Fd client = connect_tcp("127.0.0.1", port, Deadline(10), "the test listener", 0);
  Fd server = accept_tcp(listener.get());
  EXPECT_EQ(::fcntl(STDOUT_FILENO, F_GETFL), stdout_flags);
  EXPECT_EQ(::fcntl(client.get(), F_GETFL) & O_NONBLOCK, 0);
  EXPECT_EQ(local_address(client.get()), "127.0.0.1");
  EXPECT_EQ(peer_address(server.get()), "127.0.0.1");
  set_nonblocking(server.get(), true);
  EXPECT_NE(::fcntl(server.get(), F_GETFL) & O_NONBLOCK, 0);
  set_nonblocking(server.get(), false);
  EXPECT_EQ(::fcntl(server.get(), F_GETFL) & O_NONBLOCK, 0);
  tune_bulk_socket(server.get());
  int nodelay = 0;
  socklen_t size = sizeof nodelay;
  ASSERT_EQ(::getsockopt(server.get(), IPPROTO_TCP, TCP_NODELAY, &nodelay, &size), 0);
  EXPECT_NE(nodelay, 0);
  EXPECT_EQ(local_address(-1), "");
  SocketPair not_inet;
  EXPECT_EQ(local_address(not_inet.a.get()), "");
  EXPECT_EQ(local_address(listen_tcp("", 0).first.get()), "0.0.0.0");
  EXPECT_EQ(local_address(listen_tcp("0.0.0.0", 0).first.get()), "0.0.0.0");
}

// A restarted rank 0 listens on its MASTER_PORT again while the port's last
// connection, closed on its side first, waits out TIME_WAIT (SO_REUSEADDR).
TEST(Socket, APortLeftInTimeWaitIsListenedOnAgainAtOnce) {
  uint16_t port = 0;
  {
    auto [listener, bound] = listen_tcp("127.0.0.1", 0);
    port = bound;
    Fd client = connect_tcp("127.0.0.1", port, Deadline(10), "the test listener", 0);
    accept_tcp(listener.get());  // closed at once: this side's end waits in TIME_WAIT
    char byte;
    EXPECT_EQ(::recv(client.get(), &byte, 1, 0), 0);
  }
  EXPECT_NO_THROW(listen_tcp("127.0.0.1", port));
}

// A listener inherited without close-on-exec is marked so once adopted; an
// IPv6 listener on the same port number is not taken (every listener is IPv4).
TEST(Socket, AnAdoptedListenerIsClosedOnExecAndIpV4) {
  auto [listener, port] = listen_tcp("127.0.0.1", 0);
  ASSERT_EQ(::fcntl(listener.get(), F_SETFD, 0), 0);
  Fd adopted = adopt_listening_socket(listener.release(), port, "POLYCHIP_COMM_STORE_FD");
  EXPECT_NE(::fcntl(adopted.get(), F_GETFD) & FD_CLOEXEC, 0);

  Fd v6(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!v6.valid()) GTEST_SKIP() << "no IPv6 here";
  sockaddr_in6 any{};
  any.sin6_family = AF_INET6;
  socklen_t size = sizeof any;
  ASSERT_EQ(::bind(v6.get(), reinterpret_cast<sockaddr*>(&any), size), 0);
  ASSERT_EQ(::listen(v6.get(), 1), 0);
  ASSERT_EQ(::getsockname(v6.get(), reinterpret_cast<sockaddr*>(&any), &size), 0);
  expect_error(
      [&] { adopt_listening_socket(v6.get(), ntohs(any.sin6_port), "POLYCHIP_COMM_STORE_FD"); },
      StatusCode::kFailedPrecondition, "not a TCP socket listening on port");
}

// An address whose connect() fails at once (no route) is retried, not
// taken for a connection, until the deadline.
TEST(Socket, AnAddressThatFailsAtOnceIsRetriedUntilTheDeadline) {
  expect_error([] { connect_tcp("255.255.255.255", 9, Deadline(0.2), "nobody", 1); },
               StatusCode::kDeadlineExceeded, "could not connect to nobody at 255.255.255.255:9");
}

// A loopback port that refuses connections for as long as the socket lives:
// bound, not listening (listen() on it makes it a listener). A port closed
// after use was free for the listeners other processes bind to port 0: a
// parallel test's rank or rendezvous store took one, answered the
// connections meant to be refused and hung up on them.
std::pair<Fd, uint16_t> bound_port_nobody_listens_on() {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof addr;
  if (!fd.valid() || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), size) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &size) != 0)
    throw_error(StatusCode::kInternal, "test: cannot bind a loopback port");
  return {std::move(fd), ntohs(addr.sin_port)};
}

// The port of bound_port_nobody_listens_on refuses, and no listener, ours
// or another process's (SO_REUSEADDR), can be bound to it meanwhile.
TEST(Socket, ABoundPortNobodyListensOnRefusesAndCannotBeTaken) {
  const auto [held, port] = bound_port_nobody_listens_on();
  expect_error([&, port = port] { connect_tcp("127.0.0.1", port, Deadline(0.1), "nobody", 1); },
               StatusCode::kDeadlineExceeded, "(Connection refused)");
  expect_error([&, port = port] { listen_tcp("127.0.0.1", port); }, StatusCode::kUnavailable,
               "Address already in use");
  expect_error([&, port = port] { listen_tcp("", port); }, StatusCode::kUnavailable,
               "Address already in use");
}

// A peer refused only for a moment (it starts listening late) is connected
// to without the notice meant for an address that stays refused.
TEST(Socket, APeerThatListensLateIsConnectedToWithoutANotice) {
  auto [bound, port] = bound_port_nobody_listens_on();
  ::testing::internal::CaptureStderr();
  std::thread late([fd = bound.get()] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_EQ(::listen(fd, 1), 0);
    Fd accepted = accept_tcp(fd);
  });
  EXPECT_NO_THROW(connect_tcp("127.0.0.1", port, Deadline(30), "a late rank", 1));
  late.join();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// Exact transfers end with UNAVAILABLE naming how when the peer is gone,
// and with DEADLINE_EXCEEDED when it takes or sends nothing: at the
// deadline, not before, also for a cancellable deadline's short waits.
TEST(Socket, ExactTransfersEndWhenThePeerIsGoneOrAtTheDeadline) {
  SocketPair quiet;
  const auto cancel = std::make_shared<std::atomic<bool>>(false);
  const auto waited_until_the_deadline = [&](const std::function<void(const Deadline&)>& transfer,
                                             const std::string& what) {
    const auto start = Clock::now();
    expect_error([&] { transfer(Deadline(0.3, cancel)); }, StatusCode::kDeadlineExceeded, what);
    EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(300)) << what;
  };
  std::vector<uint8_t> bulk(8 << 20);
  waited_until_the_deadline(
      [&](const Deadline& d) { write_exact(quiet.a.get(), bulk.data(), bulk.size(), d, "test"); },
      "test: send timed out");
  waited_until_the_deadline(
      [&](const Deadline& d) { read_exact(quiet.a.get(), bulk.data(), 1, d, "test"); },
      "test: receive timed out");

  SocketPair gone;
  const uint8_t byte = 1;
  ASSERT_EQ(::send(gone.b.get(), &byte, 1, 0), 1);
  gone.a = Fd();  // closed with a byte unread: the other end's next read is a reset
  uint8_t got;
  expect_error([&] { read_exact(gone.b.get(), &got, 1, Deadline(10), "test"); },
               StatusCode::kUnavailable,
               "test: receive failed: " + std::string(std::strerror(ECONNRESET)));
  expect_error([&] { read_exact(gone.b.get(), &got, 1, Deadline(10), "test"); },
               StatusCode::kUnavailable, "test: the other side closed the connection");
  expect_error([&] { write_exact(gone.b.get(), &byte, 1, Deadline(10), "test"); },
               StatusCode::kUnavailable, "test: send failed: " + std::string(std::strerror(EPIPE)));
}

TEST(Handshake, SharedSecretAuthenticatesBothSides) {
  SocketPair sp;
  Credentials creds{{1, 2, 3, 4}, {}};
  Hello hello;
  hello.world = 2;
  hello.rank = 1;
  std::thread acceptor([&] {
    Hello got = handshake_as_acceptor(sp.b.get(), creds, Deadline(5));
    EXPECT_EQ(got.rank, 1u);
  });
  EXPECT_NO_THROW(handshake_as_connector(sp.a.get(), hello, creds, Deadline(5), "test peer"));
  acceptor.join();
}

TEST(Handshake, WrongSecretIsRefusedOnBothSides) {
  SocketPair sp;
  Credentials good{{1, 2, 3, 4}, {}}, bad{{9, 9, 9, 9}, {}};
  Hello hello;
  hello.world = 2;
  hello.rank = 1;
  std::thread acceptor([&] {
    try {
      handshake_as_acceptor(sp.b.get(), good, Deadline(5));
      ADD_FAILURE() << "acceptor accepted a wrong secret";
    } catch (const Error& e) {
      // The connector notices first (the acceptor's proof fails) and hangs
      // up; the acceptor still says why, naming the rank.
      EXPECT_EQ(e.code(), StatusCode::kFailedPrecondition) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 1 hung up on our proof"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("POLYCHIP_COMM_SECRET"), std::string::npos) << e.what();
    }
    sp.b.reset();
  });
  try {
    handshake_as_connector(sp.a.get(), hello, bad, Deadline(5), "test peer");
    ADD_FAILURE() << "connector passed with a wrong secret";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kFailedPrecondition) << e.what();
    EXPECT_NE(std::string(e.what()).find("secret"), std::string::npos) << e.what();
  }
  sp.a.reset();
  acceptor.join();
}

// `call` throws `code`, naming `what` in its message.
TEST(Handshake, ARankOfAnotherJobIsRefusedBeforeAnyProof) {
  SocketPair sp;
  Credentials ours{{1, 2, 3, 4}, {7}}, theirs{{1, 2, 3, 4}, {8}};
  Hello hello;
  hello.world = 2;
  hello.rank = 1;
  std::thread acceptor([&] {
    expect_error([&] { handshake_as_acceptor(sp.b.get(), ours, Deadline(5)); },
                 StatusCode::kFailedPrecondition, "rank 1 of another job");
    sp.b.reset();
  });
  // The acceptor hangs up without a challenge; the connector says what that may mean.
  expect_error([&] { handshake_as_connector(sp.a.get(), hello, theirs, Deadline(5), "test peer"); },
               StatusCode::kUnavailable, "closed the connection before its challenge");
  acceptor.join();
}

// A connector that replays a proof (made over another acceptor nonce, or
// the acceptor's own proof reflected back) or cuts its response short is
// refused: both proofs bind the Hello and this acceptor's fresh nonce, with
// a label per direction.
TEST(Handshake, ReplayedReflectedOrTruncatedProofsAreRefused) {
  const Credentials creds{{1, 2, 3, 4}, {}};
  enum class Answer { kReplayed, kReflected, kTruncated };
  for (Answer answer : {Answer::kReplayed, Answer::kReflected, Answer::kTruncated}) {
    SocketPair sp;
    std::thread acceptor([&] {
      expect_error(
          [&] { handshake_as_acceptor(sp.b.get(), creds, Deadline(5)); },
          StatusCode::kFailedPrecondition,
          answer == Answer::kTruncated ? "hung up on our proof" : "could not prove the job secret");
    });
    Hello hello;
    hello.world = 2;
    hello.rank = 1;
    std::vector<uint8_t> hello_bytes = encode_hello(hello);
    write_exact(sp.a.get(), hello_bytes.data(), hello_bytes.size(), Deadline(5), "test");
    uint8_t challenge_bytes[kChallengeSize];
    read_exact(sp.a.get(), challenge_bytes, sizeof challenge_bytes, Deadline(5), "test");
    Challenge challenge = parse_challenge(challenge_bytes);
    Digest proof = connector_proof(creds.secret, hello_bytes, challenge.nonce);
    if (answer == Answer::kReplayed) {
      const Nonce earlier{};  // the nonce of an earlier handshake
      proof = connector_proof(creds.secret, hello_bytes, earlier);
    } else if (answer == Answer::kReflected) {
      proof = challenge.proof;
    }
    std::vector<uint8_t> response = encode_response(proof);
    if (answer == Answer::kTruncated) response.pop_back();
    write_exact(sp.a.get(), response.data(), response.size(), Deadline(5), "test");
    sp.a.reset();
    acceptor.join();
  }
}

// Running out of time is reported as such on either side, not mistaken for
// a peer that hung up.
TEST(Handshake, ASilentPeerEndsInADeadlineOnEitherSide) {
  const Credentials creds{{1, 2, 3, 4}, {}};
  Hello hello;
  hello.world = 2;
  {
    SocketPair sp;  // the acceptor never challenges
    expect_error(
        [&] { handshake_as_connector(sp.a.get(), hello, creds, Deadline(0.1), "test peer"); },
        StatusCode::kDeadlineExceeded, "timed out");
  }
  {
    SocketPair sp;  // the connector sends its Hello and never answers the challenge
    std::vector<uint8_t> hello_bytes = encode_hello(hello);
    write_exact(sp.a.get(), hello_bytes.data(), hello_bytes.size(), Deadline(5), "test");
    expect_error([&] { handshake_as_acceptor(sp.b.get(), creds, Deadline(0.1)); },
                 StatusCode::kDeadlineExceeded, "timed out");
  }
}

// An acceptor that proves the secret and then does not accept: it hangs up,
// stays silent, or sends something that is not the verdict.
TEST(Handshake, TheConnectorNamesWhatCameInsteadOfTheVerdict) {
  const Credentials creds{{1, 2, 3, 4}, {}};
  enum class Then { kHangUp, kStaySilent, kSendGarbage };
  for (Then then : {Then::kHangUp, Then::kStaySilent, Then::kSendGarbage}) {
    SocketPair sp;
    std::thread acceptor([&] {
      uint8_t hello_bytes[kHelloSize];
      read_exact(sp.b.get(), hello_bytes, sizeof hello_bytes, Deadline(5), "test");
      Challenge challenge;
      challenge.nonce[0] = 1;
      challenge.proof = acceptor_proof(creds.secret, hello_bytes, challenge.nonce);
      std::vector<uint8_t> challenge_bytes = encode_challenge(challenge);
      write_exact(sp.b.get(), challenge_bytes.data(), challenge_bytes.size(), Deadline(5), "test");
      uint8_t response[kResponseSize];
      read_exact(sp.b.get(), response, sizeof response, Deadline(5), "test");
      if (then == Then::kSendGarbage) {
        uint32_t verdict = 0x4b4f4351;
        write_exact(sp.b.get(), &verdict, sizeof verdict, Deadline(5), "test");
      }
      if (then == Then::kHangUp) sp.b.reset();
    });
    Hello hello;
    hello.world = 2;
    auto connect = [&] {
      handshake_as_connector(sp.a.get(), hello, creds,
                             Deadline(then == Then::kStaySilent ? 0.2 : 5), "test peer");
    };
    if (then == Then::kHangUp) {
      expect_error(connect, StatusCode::kUnavailable, "closed the connection before accepting it");
    } else if (then == Then::kStaySilent) {
      expect_error(connect, StatusCode::kDeadlineExceeded, "timed out");
    } else {
      expect_error(connect, StatusCode::kDataCorruption, "malformed handshake verdict");
    }
    acceptor.join();
  }
}

// A rank refused by the store (wrong secret) learns why itself; the ranks
// waiting for it are told the refusal before their timeout, whether it came
// early or after the store's notice time, instead of seeing the store close.
TEST(Bootstrap, StoreTellsWaitersWhichConnectionItRefused) {
  Credentials good{{1, 2, 3, 4}, {}}, bad{{9, 9, 9, 9}, {}};
  for (double refuse_after : {0.0, 1.8}) {
    auto [listener, port] = listen_tcp("127.0.0.1", 0);
    StoreServer server(std::move(listener), good, 2.0);
    StoreClient waiter("127.0.0.1", port, good, 0, 2, Deadline(10));
    std::thread stranger([&, port = port] {
      std::this_thread::sleep_for(std::chrono::duration<double>(refuse_after));
      EXPECT_THROW(StoreClient("127.0.0.1", port, bad, 1, 2, Deadline(10)), Error);
    });
    auto start = std::chrono::steady_clock::now();
    try {
      waiter.get("peer/1");
      ADD_FAILURE() << "the key nobody set was answered";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kFailedPrecondition) << e.what();
      EXPECT_NE(std::string(e.what()).find("POLYCHIP_COMM_SECRET"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
    stranger.join();
  }
}

// For threads, where an exception would end the process: a failure instead.
std::vector<uint8_t> get_or_error(StoreClient& store, const std::string& key) {
  try {
    return store.get(key);
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
    return {};
  }
}

// A store served by rank 0 on a loopback port, for 30 s at most.
class StoreOnLoopback : public ::testing::Test {
 protected:
  const Credentials creds{{1, 2, 3, 4}, {}};
  std::pair<Fd, uint16_t> listening = listen_tcp("127.0.0.1", 0);
  const uint16_t port = listening.second;
  StoreServer server{std::move(listening.first), creds, 30.0};
};

// The store's key/value protocol between ranks: a get waits for its key, an
// add counts on from what the key holds, a set replaces, the largest request
// the wire allows is served, and the store ends once every rank is ready.
TEST_F(StoreOnLoopback, StoreServesSetGetAndAddBetweenRanks) {
  StoreClient rank0("127.0.0.1", port, creds, 0, 2, Deadline(10));
  StoreClient rank1("127.0.0.1", port, creds, 1, 2, Deadline(10));
  std::thread waiter([&] { EXPECT_EQ(get_or_error(rank1, "later"), std::vector<uint8_t>{7}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // (either order must work)
  rank0.set("later", {7});
  waiter.join();
  EXPECT_EQ(rank0.add("count", 5), 5);
  EXPECT_EQ(rank1.add("count", -2), 3);
  const std::string longest_key(kMaxStoreKey, 'k');
  const std::vector<uint8_t> largest(kMaxStoreValue, 0xab);
  rank0.set(longest_key, largest);
  EXPECT_EQ(rank1.get(longest_key), largest);
  rank1.set(longest_key, {1});
  EXPECT_EQ(rank0.get(longest_key), std::vector<uint8_t>{1});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(rank0.add(kStoreReadyKey, 1), 1);
  EXPECT_EQ(rank1.add(kStoreReadyKey, 1), 2);
  server.join();  // not at its 30 s timeout
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
}

// A rank that is ready may close its connection: the others, and what they
// wait for, are still served. One that leaves before it is ready (an add of
// another key is not being ready) is named to every rank at once.
TEST_F(StoreOnLoopback, StoreTellsOnlyOfRanksThatLeaveBeforeTheyAreReady) {
  StoreClient rank0("127.0.0.1", port, creds, 0, 4, Deadline(10));
  StoreClient rank1("127.0.0.1", port, creds, 1, 4, Deadline(10));
  std::thread waiter([&] { EXPECT_EQ(get_or_error(rank1, "later"), std::vector<uint8_t>{7}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 1 waits first
  {
    StoreClient rank2("127.0.0.1", port, creds, 2, 4, Deadline(10));
    rank2.add(kStoreReadyKey, 1);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the store sees rank 2 leave
  rank0.set("later", {7});
  waiter.join();
  {
    StoreClient rank3("127.0.0.1", port, creds, 3, 4, Deadline(10));
    rank3.add("count", 1);
  }
  const auto start = std::chrono::steady_clock::now();
  expect_error([&] { rank0.get("never"); }, StatusCode::kUnavailable,
               "rank 3 left the rendezvous before the job was set up");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
}

// A connection of another world size, or one that is not a store client,
// passes the handshake (same job and secret) but is dropped, and the store
// goes on serving the ranks it took.
TEST_F(StoreOnLoopback, StoreDropsConnectionsOfAnotherWorldOrRole) {
  StoreClient rank0("127.0.0.1", port, creds, 0, 2, Deadline(10));
  StoreClient other_world("127.0.0.1", port, creds, 1, 3, Deadline(10));
  expect_error([&] { other_world.get("key"); }, StatusCode::kUnavailable,
               "rank 0, which serves the store, is gone");
  Fd peer = connect_tcp("127.0.0.1", port, Deadline(10), "the store", 1);
  Hello hello;
  hello.role = ConnectionRole::kPeer;
  hello.rank = 1;
  hello.world = 2;
  handshake_as_connector(peer.get(), hello, creds, Deadline(10), "store");
  uint8_t byte;
  expect_error([&] { read_exact(peer.get(), &byte, 1, Deadline(3), "store"); },
               StatusCode::kUnavailable, "closed the connection");
  EXPECT_EQ(server.refused_connections(), 2);
  rank0.set("key", {1});
  EXPECT_EQ(rank0.get("key"), std::vector<uint8_t>{1});
}

// A response with a status the store never sends is refused, not read as a value.
TEST(Bootstrap, StoreClientRefusesAResponseOfAnUnknownStatus) {
  const Credentials creds{{1, 2, 3, 4}, {}};
  auto [listener, port] = listen_tcp("127.0.0.1", 0);
  std::thread store([&, fd = listener.get()] {
    Fd client = accept_tcp(fd);
    handshake_as_acceptor(client.get(), creds, Deadline(10));
    uint32_t length = 0;
    read_exact(client.get(), &length, 4, Deadline(10), "test");
    std::vector<uint8_t> request(length);
    read_exact(client.get(), request.data(), length, Deadline(10), "test");
    const uint8_t unknown_status[5] = {3, 0, 0, 0, 0};
    write_exact(client.get(), unknown_status, sizeof unknown_status, Deadline(10), "test");
  });
  StoreClient rank1("127.0.0.1", port, creds, 1, 2, Deadline(10));
  expect_error([&] { rank1.get("key"); }, StatusCode::kDataCorruption, "malformed response");
  store.join();
}

// A stranger refused early (wrong secret) does not end the others' wait for
// the rank that connects after it: the refusal is told only shortly before
// the store's timeout.
TEST(Bootstrap, ARefusedStrangerDoesNotEndTheWaitForARankThatComesLater) {
  const Credentials good{{1, 2, 3, 4}, {}}, bad{{9, 9, 9, 9}, {}};
  auto [listener, port] = listen_tcp("127.0.0.1", 0);
  StoreServer server(std::move(listener), good, 30.0);
  StoreClient rank0("127.0.0.1", port, good, 0, 2, Deadline(10));
  std::thread waiter([&] { EXPECT_EQ(get_or_error(rank0, "peer/1"), std::vector<uint8_t>{1}); });
  EXPECT_THROW(StoreClient("127.0.0.1", port, bad, 1, 2, Deadline(10)), Error);
  StoreClient rank1("127.0.0.1", port, good, 1, 2, Deadline(10));
  rank1.set("peer/1", {1});
  waiter.join();
  EXPECT_EQ(server.refused_connections(), 1);
}

// Stopped while ranks are connected and none was lost (rank 0 failing on its
// own), the store ends at once: it lingers only to tell of a lost rank.
TEST(Bootstrap, AStoreStoppedWithNoRankLostEndsAtOnce) {
  const Credentials creds{{1, 2, 3, 4}, {}};
  auto [listener, port] = listen_tcp("127.0.0.1", 0);
  auto server = std::make_unique<StoreServer>(std::move(listener), creds, 30.0);
  StoreClient rank1("127.0.0.1", port, creds, 1, 2, Deadline(10));
  rank1.set("key", {1});
  const auto start = std::chrono::steady_clock::now();
  server.reset();
  // A store that lingered would take the whole drain; a stop that does not
  // gets most of it as slack for a loaded machine.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
            0.9 * kLostNoticeDrainSeconds);
}

// A store that hangs up during the handshake, or refuses our secret, is most
// often rank 0 dying, and the error says so; running out of time is told as
// such, also while waiting for a key.
TEST(Bootstrap, StoreClientErrorsSayWhetherRankZeroMayBeGoneOrTimeRanOut) {
  const Credentials good{{1, 2, 3, 4}, {}}, bad{{9, 9, 9, 9}, {}};
  {
    auto [listener, port] = listen_tcp("127.0.0.1", 0);
    std::thread store([fd = listener.get()] { Fd hang_up = accept_tcp(fd); });
    expect_error([&, port = port] { StoreClient("127.0.0.1", port, good, 1, 2, Deadline(10)); },
                 StatusCode::kUnavailable, "; or rank 0, which serves the store, is gone");
    store.join();
  }
  auto [listener, port] = listen_tcp("127.0.0.1", 0);
  {
    StoreServer server(Fd(::dup(listener.get())), good, 30.0);
    expect_error([&, port = port] { StoreClient("127.0.0.1", port, bad, 1, 2, Deadline(10)); },
                 StatusCode::kFailedPrecondition, "; or rank 0, which serves the store, is gone");
    StoreClient rank0("127.0.0.1", port, good, 0, 2, Deadline(1.0));
    expect_error([&] { rank0.get("never"); }, StatusCode::kDeadlineExceeded,
                 "rendezvous store, waiting for key 'never'");
  }
  // Nobody accepts any more (the listener is open): the handshake times out.
  try {
    StoreClient("127.0.0.1", port, good, 1, 2, Deadline(1.0));
    ADD_FAILURE() << "a handshake nobody answered passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDeadlineExceeded) << e.what();
    EXPECT_EQ(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
}

// A store address that refuses for long is said once on stderr, well before
// the timeout (a third of it here), naming the address and the error; the
// timeout's error names them too.
TEST(Bootstrap, AStoreThatStillRefusesIsReportedOnceBeforeTheTimeout) {
  const auto [held, refusing_port] = bound_port_nobody_listens_on();
  const std::string target = "the rendezvous store at 127.0.0.1:" + std::to_string(refusing_port);
  const Credentials creds{{1, 2, 3, 4}, {}};
  ::testing::internal::CaptureStderr();
  expect_error(
      [&, port = refusing_port] { StoreClient("127.0.0.1", port, creds, 1, 2, Deadline(1.5)); },
      StatusCode::kDeadlineExceeded, "could not connect to " + target);
  const std::string said = ::testing::internal::GetCapturedStderr();
  const std::string notice = "rank 1: still cannot connect to " + target + " (Connection refused)";
  ASSERT_NE(said.find(notice), std::string::npos) << said;
  EXPECT_EQ(said.find(notice), said.rfind(notice)) << "said more than once: " << said;
}

// A peer that answers with something other than polychip's handshake (an
// HTTP server on the port) is named by what it said, not as a bad magic.
TEST(Handshake, AnotherServiceOnThePortIsNamedByItsAnswer) {
  SocketPair sp;
  std::thread web_server([&] {
    uint8_t hello_bytes[kHelloSize];
    read_exact(sp.b.get(), hello_bytes, sizeof hello_bytes, Deadline(5), "test");
    std::string answer = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n";
    answer.resize(kChallengeSize, ' ');
    write_exact(sp.b.get(), answer.data(), answer.size(), Deadline(5), "test");
  });
  const Credentials creds{{1, 2, 3, 4}, {}};
  Hello hello;
  hello.world = 2;
  expect_error([&] { handshake_as_connector(sp.a.get(), hello, creds, Deadline(5), "test peer"); },
               StatusCode::kFailedPrecondition,
               "not a polychip handshake (it began \"HTTP/1.1 400\")");
  web_server.join();
}

// `world` ranks' records, each listening on loopback `port` (one listener:
// rank 0's, the others played by the test).
std::vector<PeerInfo> loopback_peers(uint32_t world, uint16_t port) {
  std::vector<PeerInfo> peers(world);
  for (uint32_t r = 0; r < world; ++r) {
    peers[r].rank = r;
    peers[r].address = "127.0.0.1";
    peers[r].port = port;
  }
  return peers;
}

// A rank whose higher peers never connect names each of them once, however
// many sockets it waited for from each.
TEST(Transport, AMeshTimeoutNamesEachMissingRankOnce) {
  auto [listener, port] = listen_tcp("127.0.0.1", 0);
  const std::vector<PeerInfo> peers = loopback_peers(3, port);
  TransportOptions quick;
  quick.timeout_seconds = 0.3;
  quick.sockets_per_peer = 2;
  quick.shared_memory = false;
  expect_error(
      [&] {
        Transport(0, peers, std::move(listener), Credentials{{1, 2, 3, 4}, {}}, quick);
      },
      StatusCode::kDeadlineExceeded, "timed out waiting for connections from ranks 1 2");
}

// Rank 0's transport (checksums on, one or two sockets per peer, no rings),
// with rank 1 played by a test over those sockets: the frames rank 0 reads
// are whatever the test writes.
struct HandPlayedRankOne {
  explicit HandPlayedRankOne(int sockets_per_peer = 1, double timeout_seconds = 10) {
    auto [listener, port] = listen_tcp("127.0.0.1", 0);
    const std::vector<PeerInfo> peers = loopback_peers(2, port);
    TransportOptions options;
    options.timeout_seconds = timeout_seconds;
    options.sockets_per_peer = sockets_per_peer;
    options.shared_memory = false;
    options.checksum = true;
    std::thread rank0([&, fd = std::move(listener)]() mutable {
      try {
        transport = std::make_unique<Transport>(0, peers, std::move(fd), creds, options);
      } catch (const Error& e) {
        ADD_FAILURE() << e.what();
      }
    });
    socket = connect_as_rank_one(port, 0);
    if (sockets_per_peer > 1) socket1 = connect_as_rank_one(port, 1);
    // Set-up: neither a shared-memory ring nor an RDMA lane, offered and answered.
    exchange(encode_shm_offer(ShmOffer{}), kShmOfferSize);
    exchange(encode_shm_reply(false), kShmReplySize);
    exchange(encode_rdma_offer(RdmaOffer{}), kRdmaOfferSize);
    exchange(encode_rdma_reply(false), kRdmaReplySize);
    rank0.join();
  }
  Fd connect_as_rank_one(uint16_t port, uint32_t socket_index) {
    Fd fd = connect_tcp("127.0.0.1", port, Deadline(10), "rank 0", 1);
    Hello hello;
    hello.rank = 1;
    hello.world = 2;
    hello.socket_index = socket_index;
    handshake_as_connector(fd.get(), hello, creds, Deadline(10), "rank 0");
    return fd;
  }
  void exchange(const std::vector<uint8_t>& mine, size_t theirs) {
    write_exact(socket.get(), mine.data(), mine.size(), Deadline(10), "test");
    std::vector<uint8_t> bytes(theirs);
    read_exact(socket.get(), bytes.data(), bytes.size(), Deadline(10), "test");
  }
  // Rank 1's frame `h` with `payload`, its source and size (and, unless
  // `h` says otherwise, its checksum) filled in.
  static std::string frame(FrameHeader h, const std::string& payload) {
    h.source_rank = 1;
    h.payload_bytes = payload.size();
    if (h.flags & kFlagPayloadCrc && h.payload_crc == 0)
      h.payload_crc = crc32c(reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
    std::string bytes(kFrameHeaderSize, '\0');
    encode_frame_header(h, reinterpret_cast<uint8_t*>(bytes.data()));
    return bytes + payload;
  }
  void send(const std::string& bytes, const Fd* on = nullptr) {
    const int fd = on ? on->get() : socket.get();
    write_exact(fd, bytes.data(), bytes.size(), Deadline(10), "test");
  }
  FrameHeader receive_frame(std::string* payload = nullptr) {
    uint8_t header[kFrameHeaderSize];
    read_exact(socket.get(), header, sizeof header, Deadline(10), "test");
    const FrameHeader h = parse_frame_header({header, sizeof header}, 0);
    std::string bytes(h.payload_bytes, '\0');
    read_exact(socket.get(), bytes.data(), bytes.size(), Deadline(10), "test");
    if (payload) *payload = bytes;
    return h;
  }

  const Credentials creds{{1, 2, 3, 4}, {}};
  std::unique_ptr<Transport> transport;
  Fd socket, socket1;  // socket 1: with two sockets per peer
};

// The call every hand-played collective makes.
CallSignature hand_played_call() {
  CallSignature call;
  call.collective = 1;
  call.dtype = static_cast<uint8_t>(DType::kU8);
  call.count = 8;
  return call;
}

// Rank 0's next collective (its frames carry hand_played_call()).
Plan collective_plan(Transport& transport, const char* name) {
  Plan plan(FrameKind::kCollective, transport.next_collective_seq(), name);
  plan.set_call(hand_played_call());
  return plan;
}

// The header of rank 1's collective frame (seq, step 0, chunk 0) as rank 0's
// plan expects it, checksummed.
FrameHeader collective_frame(uint64_t seq) {
  FrameHeader h;
  h.seq = seq;
  h.flags = kFlagPayloadCrc;
  h.call = hand_played_call();
  return h;
}

// What rank 1 sends decides how rank 0's receive of 8 bytes ends: a frame
// that does not fit (another size, no checksum or a wrong one, a frame the
// plan has no receive for, another call, a malformed header), an abort with
// or without a reason, or the connection closed mid-frame or before it.
TEST(Transport, WhatAPeerSendsInsteadOfTheExpectedFrameIsNamed) {
  auto with = [](auto change) {
    FrameHeader h = collective_frame(0);
    change(h);
    return h;
  };
  FrameHeader other_call = collective_frame(0);
  other_call.call.count = 3;
  FrameHeader abort, placement;
  abort.kind = FrameKind::kAbort;
  placement.kind = FrameKind::kPlacement;
  const std::string offer(kPlacementOfferBytes, '\0');
  const std::string eight = "12345678";
  struct Case {
    std::string sent;
    bool close;
    StatusCode code;
    std::string what;
  };
  const Case cases[] = {
      {HandPlayedRankOne::frame(collective_frame(0), "1234"), false, StatusCode::kDataCorruption,
       "frame carries 4 bytes, expected 8"},
      {HandPlayedRankOne::frame(with([](FrameHeader& h) { h.flags = 0; }), eight), false,
       StatusCode::kFailedPrecondition, "POLYCHIP_COMM_CHECKSUM=1 here but the peer sends no"},
      {HandPlayedRankOne::frame(with([](FrameHeader& h) { h.payload_crc = 1; }), eight), false,
       StatusCode::kDataCorruption, "payload CRC32C mismatch (step 0, chunk 0)"},
      {HandPlayedRankOne::frame(with([](FrameHeader& h) { h.step = 1; }), eight), false,
       StatusCode::kDataCorruption, "unexpected frame (kind 1, seq 0, step 1, chunk 0)"},
      {HandPlayedRankOne::frame(other_call, eight), false, StatusCode::kFailedPrecondition,
       "collective #0: rank 1 called"},
      {std::string(kFrameHeaderSize, 'x'), false, StatusCode::kDataCorruption,
       "rejected a malformed frame"},
      {HandPlayedRankOne::frame(abort, "its reason"), false, StatusCode::kAborted,
       "the peer aborted: its reason"},
      {HandPlayedRankOne::frame(abort, ""), false, StatusCode::kAborted, "the peer aborted"},
      {HandPlayedRankOne::frame(abort, "its reason").substr(0, kFrameHeaderSize + 3), true,
       StatusCode::kAborted, "the peer aborted: its"},
      {HandPlayedRankOne::frame(collective_frame(0), eight).substr(0, kFrameHeaderSize + 3), true,
       StatusCode::kUnavailable, "closed its connection in the middle of a frame"},
      {HandPlayedRankOne::frame(placement, offer).substr(0, kFrameHeaderSize + 3), true,
       StatusCode::kUnavailable, "closed its connection in the middle of a frame"},
      {HandPlayedRankOne::frame(placement, offer), false, StatusCode::kDataCorruption,
       "placement offers from a peer this rank has no RDMA lane to"},
      {HandPlayedRankOne::frame(collective_frame(0), eight).substr(0, 10), true,
       StatusCode::kUnavailable, "closed its connection with 1 frames still expected"},
      {"", true, StatusCode::kUnavailable, "closed its connection with 1 frames still expected"},
  };
  for (const Case& k : cases) {
    HandPlayedRankOne one;
    ASSERT_TRUE(one.transport);
    Plan plan = collective_plan(*one.transport, "test");
    uint8_t into[8];
    plan.recv(1, 0, 0, into, sizeof into);
    one.send(k.sent);
    if (k.close) one.socket = Fd();
    expect_error([&] { one.transport->run(plan); }, k.code, k.what);
  }
}

// A frame rank 1 sends ahead waits for the plan it belongs to; a doorbell
// is passed over; a status frame (rank 1 timed out) is answered with where
// rank 0 waits; rank 0's frames carry their seq, chunk and checksum.
TEST(Transport, AFrameAheadWaitsForItsPlanAndAStatusFrameIsAnswered) {
  HandPlayedRankOne one;
  ASSERT_TRUE(one.transport);
  Transport& transport = *one.transport;
  FrameHeader doorbell, status;
  doorbell.kind = FrameKind::kDoorbell;
  status.kind = FrameKind::kStatus;
  status.step = static_cast<uint32_t>(WaitingIn::kCollective);
  status.seq = 2;
  status.call = hand_played_call();
  char got[3][8];
  auto received = [&](int i) { return std::string(got[i], sizeof got[i]); };
  Plan first = collective_plan(transport, "first");
  first.recv(1, 0, 0, got[0], 8);
  one.send(HandPlayedRankOne::frame(doorbell, "") +
           HandPlayedRankOne::frame(collective_frame(0), "aaaaaaaa") +
           HandPlayedRankOne::frame(collective_frame(1), "bbbbbbbb"));
  transport.run(first);
  EXPECT_EQ(received(0), "aaaaaaaa");

  Plan second = collective_plan(transport, "second");
  second.recv(1, 0, 0, got[1], 8);
  const std::string sent = "cccccccc";
  second.send(1, 0, 1, sent.data(), sent.size());
  transport.run(second);
  EXPECT_EQ(received(1), "bbbbbbbb");
  std::string payload;
  const FrameHeader h = one.receive_frame(&payload);
  EXPECT_EQ(h.kind, FrameKind::kCollective);
  EXPECT_EQ(h.seq, 1u);
  EXPECT_EQ(h.chunk, 1u);
  EXPECT_EQ(payload, sent);
  EXPECT_NE(h.flags & kFlagPayloadCrc, 0);
  EXPECT_EQ(h.payload_crc, crc32c(reinterpret_cast<const uint8_t*>(sent.data()), sent.size()));

  Plan third = collective_plan(transport, "third");
  third.recv(1, 0, 0, got[2], 8);
  std::thread rank0([&] {
    try {
      transport.run(third);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  });
  one.send(HandPlayedRankOne::frame(status, ""));
  const FrameHeader answer = one.receive_frame();
  EXPECT_EQ(answer.kind, FrameKind::kStatus);
  EXPECT_EQ(answer.seq, 2u);
  EXPECT_EQ(answer.step, static_cast<uint32_t>(WaitingIn::kCollective));
  one.send(HandPlayedRankOne::frame(collective_frame(2), "dddddddd"));
  rank0.join();
  EXPECT_EQ(received(2), "dddddddd");
}

// A frame ahead of the plan that is larger than the inbox waits parked while
// the plan still sends (its unread bytes keep the socket readable), and is
// received whole by the plan it belongs to.
TEST(Transport, AParkedFrameLargerThanTheInboxWaitsWhileThePlanStillSends) {
  HandPlayedRankOne one;
  ASSERT_TRUE(one.transport);
  Transport& transport = *one.transport;
  const std::string ahead(64 << 10, 'b');
  one.send(HandPlayedRankOne::frame(collective_frame(0), "aaaaaaaa") +
           HandPlayedRankOne::frame(collective_frame(1), ahead));
  Plan first = collective_plan(transport, "first");
  char got[8];
  first.recv(1, 0, 0, got, sizeof got);
  // More than the socket buffers hold: rank 0 sends it over many turns.
  const std::vector<uint8_t> bulk(32 << 20, 0x11);
  first.send(1, 0, 1, bulk.data(), bulk.size());
  std::thread rank0([&] {
    try {
      transport.run(first);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  });
  std::string payload;
  try {
    EXPECT_EQ(one.receive_frame(&payload).payload_bytes, bulk.size());
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
  }
  rank0.join();
  EXPECT_EQ(std::string(got, sizeof got), "aaaaaaaa");
  Plan second = collective_plan(transport, "second");
  std::string received(ahead.size(), '\0');
  second.recv(1, 0, 0, received.data(), received.size());
  transport.run(second);
  EXPECT_EQ(received, ahead);
}

// An abort whose reason straddles two reads of the inbox is read to its
// end and no further: its reason is all the error says of it.
TEST(Transport, AnAbortSplitAcrossReadsEndsWithItsWholeReason) {
  HandPlayedRankOne one;
  ASSERT_TRUE(one.transport);
  FrameHeader abort, doorbell;
  abort.kind = FrameKind::kAbort;
  doorbell.kind = FrameKind::kDoorbell;
  const std::string reason(4096, 'r');
  // The first read fills the inbox: the data frame, the abort's header and
  // 100 bytes of its reason.
  const std::string data(SocketInbox::kCapacity - 2 * kFrameHeaderSize - 100, 'd');
  one.send(HandPlayedRankOne::frame(collective_frame(0), data) +
           HandPlayedRankOne::frame(abort, reason) + HandPlayedRankOne::frame(doorbell, ""));
  Plan plan = collective_plan(*one.transport, "test");
  std::string got(data.size(), '\0');
  plan.recv(1, 0, 0, got.data(), got.size());
  expect_error([&] { one.transport->run(plan); }, StatusCode::kAborted,
               "the peer aborted: " + reason + " [rank 1");
}

// A peer that resets the connection (it closed with bytes unread), between
// frames or inside one, is named as lost by the error recv() gave.
TEST(Transport, AConnectionResetIsNamedAsTheReceiveThatFailed) {
  const std::string frame = HandPlayedRankOne::frame(collective_frame(1), "12345678");
  for (const std::string& before_reset : {std::string(), frame.substr(0, kFrameHeaderSize + 3)}) {
    HandPlayedRankOne one;
    ASSERT_TRUE(one.transport);
    Plan first = collective_plan(*one.transport, "first");
    const std::string sent = "unread";
    first.send(1, 0, 0, sent.data(), sent.size());
    one.transport->run(first);
    pollfd readable{one.socket.get(), POLLIN, 0};
    ASSERT_EQ(::poll(&readable, 1, 10000), 1);
    one.send(before_reset);
    one.socket = Fd();  // with rank 0's frame unread: a reset
    Plan second = collective_plan(*one.transport, "second");
    char got[8];
    second.recv(1, 0, 0, got, sizeof got);
    expect_error([&] { one.transport->run(second); }, StatusCode::kUnavailable,
                 "receive failed: " + std::string(std::strerror(ECONNRESET)));
  }
}

// A rank that lost a socket reads its others for an abort that says why,
// but not past a later plan's frame parked on one of them. (Rank 0 answers
// the frame before the parked one, and parks, before rank 1 cuts socket 1.)
TEST(Transport, ALostSocketDoesNotReadPastAFrameParkedOnAnother) {
  HandPlayedRankOne one(2);
  ASSERT_TRUE(one.transport);
  Plan plan = collective_plan(*one.transport, "test");
  char got[2][8];
  const int first_task = plan.recv(1, 0, 0, got[0], 8);
  plan.recv(1, 0, 1, got[1], 8);
  const char ack = 'k';
  plan.after(plan.send(1, 0, 2, &ack, 1), first_task);
  one.send(HandPlayedRankOne::frame(collective_frame(0), "aaaaaaaa") +
           HandPlayedRankOne::frame(collective_frame(1), std::string(100, 'b')));
  std::thread rank0([&] {
    expect_error([&] { one.transport->run(plan); }, StatusCode::kUnavailable,
                 "closed its connection in the middle of a frame");
  });
  FrameHeader cut = collective_frame(0);
  cut.chunk = 1;  // socket 1's
  try {
    one.receive_frame();
    one.send(HandPlayedRankOne::frame(cut, "cccccccc").substr(0, kFrameHeaderSize + 3),
             &one.socket1);
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
  }
  one.socket1 = Fd();
  rank0.join();
}

// A peer that reset one socket said why on another: a send that finds the
// reset (before anything is read) ends with that reason, not the reset.
TEST(Transport, AnAbortOnAnotherSocketSaysWhyAPeerResetOne) {
  HandPlayedRankOne one(2);
  ASSERT_TRUE(one.transport);
  const std::string sent = "unread";
  Plan first = collective_plan(*one.transport, "first");
  first.send(1, 0, 1, sent.data(), sent.size());  // chunk 1: socket 1
  one.transport->run(first);
  pollfd readable{one.socket1.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&readable, 1, 10000), 1);
  FrameHeader abort;
  abort.kind = FrameKind::kAbort;
  one.send(HandPlayedRankOne::frame(abort, "rank 1 failed: its reason"));
  one.socket1 = Fd();  // with rank 0's frame unread: a reset
  Plan second = collective_plan(*one.transport, "second");
  second.send(1, 0, 1, sent.data(), sent.size());
  expect_error([&] { one.transport->run(second); }, StatusCode::kAborted,
               "the peer aborted: rank 1 failed: its reason");
}

// A peer that hangs up on a socket that owes nothing to the plan is lost all
// the same while that socket is busy: a header begun on it, or a send of
// this rank's still running (the peer reads on, its half of the socket shut).
TEST(Transport, APeerThatHangsUpOnABusySocketIsLostAtOnce) {
  {
    HandPlayedRankOne one(2);
    ASSERT_TRUE(one.transport);
    one.send(HandPlayedRankOne::frame(collective_frame(0), "").substr(0, 10), &one.socket1);
    one.socket1 = Fd();
    Plan plan = collective_plan(*one.transport, "header begun");
    char got[8];
    plan.recv(1, 0, 0, got, sizeof got);
    expect_error([&] { one.transport->run(plan); }, StatusCode::kUnavailable,
                 "closed its connection with 0 frames still expected");
  }
  HandPlayedRankOne one;
  ASSERT_TRUE(one.transport);
  ASSERT_EQ(::shutdown(one.socket.get(), SHUT_WR), 0);
  Plan plan = collective_plan(*one.transport, "sending");
  const std::vector<uint8_t> bulk(32 << 20, 0x22);  // more than the socket buffers hold
  plan.send(1, 0, 0, bulk.data(), bulk.size());
  std::thread rank0([&] {
    expect_error([&] { one.transport->run(plan); }, StatusCode::kUnavailable,
                 "closed its connection with 0 frames still expected");
  });
  try {
    one.receive_frame();
  } catch (const Error&) {
    // rank 0 gave up in the middle of the frame
  }
  rank0.join();
}

// A timeout names the collective rank 1 entered (it sent one of its two
// frames) and stopped sending in; it did not leave it.
TEST(Transport, ATimeoutSaysThePeerEnteredTheCollectiveItStoppedSendingIn) {
  HandPlayedRankOne one(1, 1.0);
  ASSERT_TRUE(one.transport);
  Plan plan = collective_plan(*one.transport, "test");
  char got[2][8];
  plan.recv(1, 0, 0, got[0], 8);
  plan.recv(1, 0, 1, got[1], 8);
  one.send(HandPlayedRankOne::frame(collective_frame(0), "aaaaaaaa"));
  ::testing::internal::CaptureStderr();  // the hang's JSON view
  expect_error([&] { one.transport->run(plan); }, StatusCode::kDeadlineExceeded,
               "it entered test #0 and stopped sending (missing-exit");
  (void)::testing::internal::GetCapturedStderr();
}

// A reduced payload whose bytes come split inside an element is reduced
// whole: rank 0 reads the first frame and 6 bytes of the second at once
// and answers the first before the last 2 bytes are sent.
TEST(Transport, AReducedPayloadSplitInsideAnElementIsReducedWhole) {
  HandPlayedRankOne one;
  ASSERT_TRUE(one.transport);
  Plan plan = collective_plan(*one.transport, "reduce");
  char first[4];
  const int first_task = plan.recv(1, 0, 0, first, sizeof first);
  const float local[2] = {1, 2}, theirs[2] = {10, 20};
  float sum[2] = {0, 0};
  plan.recv_reduce(1, 0, 1, sum, local, sizeof sum, reduce_function(DType::kF32, ReduceOp::kSum),
                   sizeof(float));
  const char ack = 'k';
  plan.after(plan.send(1, 0, 2, &ack, 1), first_task);
  FrameHeader reduced = collective_frame(0);
  reduced.chunk = 1;
  const std::string second = HandPlayedRankOne::frame(
      reduced, std::string(reinterpret_cast<const char*>(theirs), sizeof theirs));
  one.send(HandPlayedRankOne::frame(collective_frame(0), "aaaa") +
           second.substr(0, kFrameHeaderSize + 6));
  std::thread rank0([&] {
    try {
      one.transport->run(plan);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  });
  try {
    one.receive_frame();
    one.send(second.substr(kFrameHeaderSize + 6));
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
  }
  rank0.join();
  EXPECT_EQ(sum[0], 11.0f);
  EXPECT_EQ(sum[1], 22.0f);
}

// Every listener is IPv4: an IPv6 literal as the store's or a rank's address
// is refused naming the variable, not retried until the timeout.
TEST(Bootstrap, IpV6LiteralAddressesAreRefusedNamingTheVariable) {
  ::setenv("RANK", "0", 1);
  ::setenv("WORLD_SIZE", "1", 1);
  for (const char* address : {"::1", "[::1]", "fe80::1%eth0"}) {
    ::setenv("MASTER_ADDR", address, 1);
    expect_error([] { detect_launch(); }, StatusCode::kInvalidArgument,
                 std::string("MASTER_ADDR='") + address + "': polychip listens on IPv4 only");
    ::setenv("POLYCHIP_COMM_ADVERTISE_ADDR", address, 1);
    expect_error([] { CommConfig::from_environment(); }, StatusCode::kInvalidArgument,
                 std::string("POLYCHIP_COMM_ADVERTISE_ADDR='") + address + "'");
  }
  ::setenv("MASTER_ADDR", "localhost", 1);
  EXPECT_EQ(detect_launch().master_address, "localhost");
  ::setenv("POLYCHIP_COMM_ADVERTISE_ADDR", "10.0.0.7", 1);
  EXPECT_EQ(CommConfig::from_environment().advertise_address, "10.0.0.7");
  for (const char* v : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "POLYCHIP_COMM_ADVERTISE_ADDR"}) {
    ::unsetenv(v);
  }
}

// With nothing from the store, a watch waits out its grace and no longer,
// and the connection is the caller's again.
TEST_F(StoreOnLoopback, ALostPeerWatchStopsAfterItsGraceWhenTheStoreIsSilent) {
  StoreClient rank0("127.0.0.1", port, creds, 0, 2, Deadline(10));
  LostPeerWatch watch(rank0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(watch.stop_after(std::chrono::milliseconds(100)), "");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2);
  EXPECT_FALSE(watch.cancelled()->load());
  rank0.set("key", {1});
  EXPECT_EQ(rank0.get("key"), std::vector<uint8_t>{1});
}

TEST(Bootstrap, SlurmNodeListFirstHost) {
  EXPECT_EQ(first_slurm_host("node[03-05,7],gpu1"), "node03");
  EXPECT_EQ(first_slurm_host("a1,a2"), "a1");
  EXPECT_EQ(first_slurm_host("solo"), "solo");
}

TEST(Bootstrap, BooleanVariablesTakeTheUsualSpellingsAndRefuseOthers) {
  for (const char* on : {"1", "true", "YES", "On"}) {
    ::setenv("POLYCHIP_COMM_CHECKSUM", on, 1);
    EXPECT_TRUE(CommConfig::from_environment().checksum) << on;
  }
  for (const char* off : {"0", "False", "no", "OFF"}) {
    ::setenv("POLYCHIP_COMM_CHECKSUM", off, 1);
    EXPECT_FALSE(CommConfig::from_environment().checksum) << off;
  }
  ::setenv("POLYCHIP_COMM_CHECKSUM", "ture", 1);
  try {
    CommConfig::from_environment();
    ADD_FAILURE() << "a misspelt boolean was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("POLYCHIP_COMM_CHECKSUM='ture'"), std::string::npos)
        << e.what();
  }
  ::unsetenv("POLYCHIP_COMM_CHECKSUM");
}

// The derived store port stays below the kernel's ephemeral range, where an
// outgoing connection of any process could already hold it.
TEST(Bootstrap, DerivedStorePortAvoidsTheEphemeralRange) {
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  ::unsetenv("MASTER_PORT");
  std::set<uint16_t> seen;
  for (int job = 0; job < 2000; ++job) {
    ::setenv("OMPI_MCA_ess_base_jobid", std::to_string(job * 65536 + 7).c_str(), 1);
    LaunchInfo info = detect_launch();
    ASSERT_TRUE(info.master_port_derived);
    ASSERT_GE(info.master_port, 20000) << "job " << job;
    ASSERT_LT(info.master_port, 32768) << "job " << job;
    EXPECT_EQ(detect_launch().master_port, info.master_port);
    seen.insert(info.master_port);
  }
  EXPECT_GT(seen.size(), 1700u);  // spread, so concurrent jobs rarely share one
  ::setenv("MASTER_PORT", "41234", 1);
  EXPECT_EQ(detect_launch().master_port, 41234);
  EXPECT_FALSE(detect_launch().master_port_derived);
  for (const char* v : {"MASTER_PORT", "OMPI_MCA_ess_base_jobid", "OMPI_COMM_WORLD_RANK",
                        "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
    ::unsetenv(v);
  }
}

// Rank 0 takes the store socket the local launcher hands it only when it is
// a TCP socket listening on MASTER_PORT. A process takes it once (its first
// communicator), so the checks run in a fresh process of this test binary:
// in this one, an earlier test or --gtest_repeat may have taken it already.
void check_inherited_store_socket() {
  auto [listener, port] = listen_tcp("127.0.0.1", 0);
  auto [other, other_port] = listen_tcp("127.0.0.1", 0);
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  Fd unconnected(::socket(AF_INET, SOCK_STREAM, 0));
  for (int bad : {pipe_ends[0], unconnected.get(), other.get(), 987}) {
    LaunchInfo launch;
    launch.launcher = "polychip";
    launch.master_address = "127.0.0.1";
    launch.master_port = port;
    launch.secret.assign(32, 7);
    launch.store_listener_fd = bad;
    CommConfig quick;
    quick.timeout_seconds = 3;  // a wrongly taken socket would leave the rank waiting on it
    try {
      Communicator c(launch, quick);
      ADD_FAILURE() << "fd " << bad << " was taken as the store's socket";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("POLYCHIP_COMM_STORE_FD=" + std::to_string(bad)),
                std::string::npos)
          << e.what();
    }
  }
  ::close(pipe_ends[0]);
  ::close(pipe_ends[1]);
  LaunchInfo launch;
  launch.launcher = "polychip";
  launch.master_address = "127.0.0.1";
  launch.master_port = port;
  launch.secret.assign(32, 7);
  launch.store_listener_fd = listener.get();
  Communicator c(launch, CommConfig{});
  (void)listener.release();  // the communicator owns it now
  EXPECT_EQ(c.size(), 1);
}

TEST(Bootstrap, InheritedStoreSocketIsCheckedBeforeUse) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // re-executes this binary: a fresh process
  EXPECT_EXIT(
      {
        check_inherited_store_socket();
        std::exit(::testing::Test::HasFailure() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Bootstrap, UniqueIdRejectsGarbage) {
  EXPECT_THROW(UniqueId::from_hex("zz"), Error);
  EXPECT_THROW(UniqueId::from_hex("00"), Error);
  UniqueId junk;
  EXPECT_THROW(Communicator(junk, 0, 1), Error);
}

// Ranks as threads of this process, joined through a unique id; `configure`
// changes one rank's copy of `config` (ranks on different devices or links).
void with_threads(int world, const std::function<void(Communicator&)>& body,
                  CommConfig config = CommConfig{},
                  const std::function<void(int rank, CommConfig&)>& configure = nullptr) {
  config.timeout_seconds = 30;
  UniqueId id = Communicator::create_unique_id(config);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      CommConfig mine = config;
      if (configure) configure(r, mine);
      Communicator comm(id, r, world, mine);
      body(comm);
    });
  }
  for (auto& t : threads) t.join();
}

// Rank 2 fails after the ranks exchanged addresses (its transport refuses
// its socket count) and never connects: ranks 0 and 1, waiting for its
// connections, are told by the store at once — not at their 30 s timeout.
TEST(Communicator, ARankThatDiesDuringSetUpEndsTheOthersSetUpAtOnce) {
  CommConfig config;
  config.timeout_seconds = 30;
  UniqueId id = Communicator::create_unique_id(config);
  std::string errors[3];
  double seconds[3] = {0, 0, 0};
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      CommConfig c = config;
      if (r == 2) c.sockets_per_peer = 99;
      const auto start = std::chrono::steady_clock::now();
      try {
        Communicator comm(id, r, 3, c);
      } catch (const Error& e) {
        errors[r] = e.message();
      }
      seconds[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_NE(errors[2].find("sockets per peer must be in [1, 16], got 99"), std::string::npos)
      << errors[2];
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(errors[r].find("rank 2 left the rendezvous before the job was set up"),
              std::string::npos)
        << "rank " << r << ": " << errors[r];
    EXPECT_LT(seconds[r], 5.0) << "rank " << r;
  }
}

// Rank 0 advertises an address nobody can reach it on: both ranks run out of
// time in the mesh and say what they waited for. The store outlives their
// timeouts, so rank 0 does not see it close first and call itself gone.
TEST(Communicator, AnUnreachableRankTimesOutNamingWhatEachRankWaitedFor) {
  CommConfig config;
  config.timeout_seconds = 1.5;
  UniqueId id = Communicator::create_unique_id(config);
  std::string errors[2];
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      CommConfig c = config;
      if (r == 0) {
        c.listen_address = "127.0.0.1";
        c.advertise_address = "127.0.0.2";  // loopback, but not where it listens
      }
      try {
        Communicator comm(id, r, 2, c);
      } catch (const Error& e) {
        errors[r] = e.message();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_NE(errors[0].find("rank 0 timed out waiting for connections from ranks 1"),
            std::string::npos)
      << errors[0];
  EXPECT_TRUE(errors[1].find("could not connect to rank 0 at 127.0.0.2:") != std::string::npos ||
              errors[1].find("rank 0 left the rendezvous") != std::string::npos)
      << errors[1];
}

// Rank 1 calls all_reduce with another count (a classic framework bug):
// both ranks fail at once — not at the 30 s timeout — and the error names
// both calls and the collective's sequence number.
// Counts: both framed (direct, then ring), both through the shared-memory
// mailboxes, and one of each (rank 0 mails, rank 1 sends frames).
TEST(Communicator, RanksThatCallDifferentCollectivesFailAtOnceNamingBothCalls) {
  struct Case {
    uint64_t small_bytes, counts[2];
  };
  for (Case k : {Case{64 << 10, {1000, 2000}}, Case{0, {1000, 2000}}, Case{64 << 10, {2, 4}},
                 Case{64 << 10, {2, 1000}}}) {
    CommConfig config;
    config.timeout_seconds = 30;
    config.small_bytes = k.small_bytes;
    UniqueId id = Communicator::create_unique_id(config);
    std::string errors[2];
    double seconds[2] = {0, 0};
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        Communicator comm(id, r, 2, config);
        std::vector<float> in(2000, 1.0f), out(2000);
        comm.barrier();
        const auto start = std::chrono::steady_clock::now();
        try {
          comm.all_reduce(in.data(), out.data(), k.counts[r], DType::kF32, ReduceOp::kSum);
        } catch (const Error& e) {
          errors[r] = e.message();
        }
        seconds[r] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      });
    }
    for (auto& t : threads) t.join();
    const std::string calls[2] = {
        "all_reduce(f32, count " + std::to_string(k.counts[0]) + ", op sum)",
        "all_reduce(f32, count " + std::to_string(k.counts[1]) + ", op sum)"};
    for (int r = 0; r < 2; ++r) {
      EXPECT_LT(seconds[r], 5.0) << "rank " << r;
      // Whichever rank sees the other's call first fails and aborts the
      // other, which then reports the first rank's words: both name both.
      const std::string own = "collective #1: rank " + std::to_string(1 - r) + " called " +
                              calls[1 - r] + " while rank " + std::to_string(r) + " called " +
                              calls[r];
      const std::string peers = "rank " + std::to_string(1 - r) +
                                " failed: all_reduce #1: collective #1: rank " + std::to_string(r) +
                                " called " + calls[r] + " while rank " + std::to_string(1 - r) +
                                " called " + calls[1 - r];
      EXPECT_TRUE(errors[r].find(own) != std::string::npos ||
                  errors[r].find(peers) != std::string::npos)
          << "rank " << r << ": " << errors[r];
    }
  }
}

// All-reduces small enough for the shared-memory mailboxes take them, with
// the bits of the framed direct all-reduce (checksums keep a communicator
// on frames) on every rank; a broadcast root running a collective ahead
// leaves its mailbox slots in use, which the next exchange waits out.
TEST(Communicator, SmallAllReducesGoThroughTheMailboxesWithTheFramedBits) {
  constexpr int kWorld = 3;
  CommConfig mail_config, framed_config;
  mail_config.timeout_seconds = framed_config.timeout_seconds = 30;
  framed_config.checksum = true;
  const UniqueId mail_id = Communicator::create_unique_id(mail_config);
  const UniqueId framed_id = Communicator::create_unique_id(framed_config);
  std::vector<std::vector<uint8_t>> results[kWorld];
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      Communicator mail(mail_id, r, kWorld, mail_config);
      Communicator framed(framed_id, r, kWorld, framed_config);
      std::mt19937 rng(r + 1);
      std::uniform_real_distribution<float> value(-1.0f, 1.0f);
      std::vector<uint8_t> in(512), out(512), expected(512);
      int call = 0;
      for (DType dt : {DType::kF32, DType::kBF16, DType::kI64}) {
        const uint64_t w = dtype_size(dt), fits = Transport::kMailboxBlockBytes / w;
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
          for (uint64_t count : {uint64_t{1}, uint64_t{3}, fits - 1, fits, fits + 1}) {
            for (uint64_t i = 0; i < count; ++i) {
              // Magnitudes far apart: a sum's bits depend on its order.
              const float v = value(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
              if (dt == DType::kI64) {
                const int64_t x = static_cast<int64_t>(rng() % 2001) - 1000;
                std::memcpy(&in[i * w], &x, w);
              } else if (dt == DType::kBF16) {
                const uint16_t x = f32_to_bf16_bits(v);
                std::memcpy(&in[i * w], &x, w);
              } else {
                std::memcpy(&in[i * w], &v, w);
              }
            }
            mail.all_reduce(in.data(), out.data(), count, dt, op);
            EXPECT_EQ(mail.last_call().mailbox, count <= fits) << dtype_name(dt) << " " << count;
            framed.all_reduce(in.data(), expected.data(), count, dt, op);
            EXPECT_FALSE(framed.last_call().mailbox);
            EXPECT_EQ(std::memcmp(out.data(), expected.data(), count * w), 0)
                << "rank " << r << " " << dtype_name(dt) << " count " << count;
            results[r].emplace_back(out.begin(), out.begin() + static_cast<long>(count * w));
            if (++call % 3 == 0) {
              float b = static_cast<float>(call), got = 0;
              mail.broadcast(&b, &got, 1, DType::kF32, call % kWorld);
              EXPECT_EQ(got, static_cast<float>(call));
            }
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 1; r < kWorld; ++r) EXPECT_EQ(results[r], results[0]) << "rank " << r;
}

// Small all-gathers take the mailboxes too: every rank's part lands in
// place, in place or not, at the sizes around the mailbox block; beside a
// rank on TCP (rank 2 refuses shared memory) ranks 0 and 1 mail each other
// and frame with it, while rank 2 runs the framed all-gather unchanged.
TEST(Communicator, SmallAllGathersGoThroughTheMailboxesAlsoBesideTcpPeers) {
  constexpr int kWorld = 3;
  for (bool rank_2_on_tcp : {false, true}) {
    with_threads(
        kWorld,
        [&](Communicator& comm) {
          const int r = comm.rank();
          const bool mails = !(rank_2_on_tcp && r == 2);
          auto part_of = [](int rank, uint64_t i) { return int64_t{1000} * rank + int64_t(i) + 1; };
          const uint64_t fits = Transport::kMailboxBlockBytes / sizeof(int64_t);
          for (uint64_t count : {uint64_t{1}, uint64_t{3}, fits - 1, fits, fits + 1}) {
            for (bool in_place : {false, true}) {
              std::vector<int64_t> in(count), out(count * kWorld, -1);
              int64_t* send = in_place ? out.data() + r * count : in.data();
              for (uint64_t i = 0; i < count; ++i) send[i] = part_of(r, i);
              comm.all_gather(send, out.data(), count, DType::kI64);
              const std::string where = "rank " + std::to_string(r) + " count " +
                                        std::to_string(count) + (in_place ? " in place" : "") +
                                        (rank_2_on_tcp ? ", rank 2 on tcp" : "");
              EXPECT_EQ(comm.last_call().mailbox, mails && count <= fits) << where;
              for (int from = 0; from < kWorld; ++from) {
                for (uint64_t i = 0; i < count; ++i) {
                  ASSERT_EQ(out[from * count + i], part_of(from, i))
                      << where << ", part of rank " << from << " at " << i;
                }
              }
            }
          }
        },
        CommConfig{},
        [&](int r, CommConfig& mine) {
          if (rank_2_on_tcp && r == 2) mine.transport = "tcp";
        });
  }
}

// The JSON lines ("polychip_comm_hang") the ranks printed, by rank.
std::map<int, nlohmann::json> hang_lines(const std::string& captured) {
  std::map<int, nlohmann::json> lines;
  std::istringstream in(captured);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("{\"polychip_comm_hang\"", 0) != 0) continue;
    nlohmann::json j = nlohmann::json::parse(line)["polychip_comm_hang"];
    lines[j["rank"].get<int>()] = j;
  }
  return lines;
}

// Runs `body` on `world` thread ranks whose calls time out after 1 s:
// each rank's error message ("" if none) and the hang lines they printed.
struct TimedOutRun {
  std::vector<std::string> errors;
  std::map<int, nlohmann::json> lines;
};
TimedOutRun run_until_timeout(int world, const std::function<void(Communicator&)>& body) {
  CommConfig config;
  config.timeout_seconds = 1;
  UniqueId id = Communicator::create_unique_id(config);
  TimedOutRun run;
  run.errors.resize(world);
  std::vector<std::thread> threads;
  testing::internal::CaptureStderr();
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Communicator comm(id, r, world, config);
      try {
        body(comm);
      } catch (const Error& e) {
        run.errors[r] = e.message();
      }
    });
  }
  for (auto& t : threads) t.join();
  run.lines = hang_lines(testing::internal::GetCapturedStderr());
  return run;
}

// Rank 2 never enters the second all_reduce: ranks 0 and 1 time out (1 s)
// saying which rank is missing and that it never entered, with their call.
TEST(Communicator, ATimeoutNamesTheRankThatNeverEnteredTheCollective) {
  std::atomic<int> failed{0};
  auto [errors, lines] = run_until_timeout(3, [&failed](Communicator& comm) {
    std::vector<float> in(16, 1.0f), out(16);
    comm.all_reduce(in.data(), out.data(), 16, DType::kF32, ReduceOp::kSum);
    if (comm.rank() == 2) {
      // Stays alive, connections open and outside any call, until the others
      // have failed: a fixed 2.5 s ran out first on a loaded machine, where
      // their 1 s timeout and 1 s job-wide probe took 2.6-3.1 s, and its
      // hang-up was what they reported.
      const auto give_up = Clock::now() + std::chrono::seconds(30);
      while (failed.load() < 2 && Clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    try {
      comm.all_reduce(in.data(), out.data(), 16, DType::kF32, ReduceOp::kSum);
    } catch (const Error&) {
      ++failed;
      throw;
    }
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(errors[r].find("all_reduce #1: timed out"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("from rank 2 ("), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find(": it never entered all_reduce #1 (missing-enter; its newest message "
                             "here was of collective #0)"),
              std::string::npos)
        << "rank " << r << ": " << errors[r];
    // The job-wide view, its own or (aborted by it) the other rank's: rank 2
    // answered nothing, the other rank waits in the same call.
    EXPECT_NE(errors[r].find("job-wide view (every rank asked on the timeout): missing-enter: "
                             "rank(s) 2 never entered this call; rank "),
              std::string::npos)
        << "rank " << r << ": " << errors[r];
    EXPECT_NE(errors[r].find(" waits in the same call; rank 2 gave no answer within 1 s"),
              std::string::npos)
        << "rank " << r << ": " << errors[r];
  }
  ASSERT_FALSE(lines.empty()) << "no JSON line";
  for (auto& [r, line] : lines) {
    EXPECT_EQ(line["class"], "missing-enter");
    EXPECT_EQ(line["ranks"][2]["state"], "no-answer");
    EXPECT_EQ(line["ranks"][1 - r]["state"], "in-call");
    EXPECT_EQ(line["waiting_in"], "collective #1 all_reduce(f32, count 16, op sum)");
  }
}

// Rank 2 waits in a recv that rank 0 never serves while ranks 0 and 1 are in
// an all_reduce: it answers from its recv, so the view says where it is.
TEST(Communicator, ATimeoutSaysWhereAMissingRankWaitsInstead) {
  auto [errors, lines] = run_until_timeout(3, [](Communicator& comm) {
    std::vector<float> in(16, 1.0f), out(16);
    if (comm.rank() == 2) {
      comm.recv(BufferRef(out.data()), 16, DType::kF32, 0);
    } else {
      comm.all_reduce(in.data(), out.data(), 16, DType::kF32, ReduceOp::kSum);
    }
  });
  // Whoever timed out first (the recv or the all_reduce side) says where
  // the others wait; the rest are aborted with its words.
  ASSERT_FALSE(lines.empty()) << errors[0] << "\n" << errors[2];
  for (auto& [r, line] : lines) {
    EXPECT_EQ(line["class"], "missing-enter") << line.dump();
    const int other = r == 2 ? 0 : 2;
    EXPECT_EQ(line["ranks"][other]["state"], "elsewhere") << line.dump();
    EXPECT_EQ(line["ranks"][other]["waiting_in"],
              r == 2 ? "collective #0 all_reduce(f32, count 16, op sum)" : "send/recv")
        << line.dump();
  }
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(errors[r].find("rank 2 waits in send/recv") != std::string::npos ||
                errors[r].find("rank 0 waits in collective #0 all_reduce") != std::string::npos)
        << "rank " << r << ": " << errors[r];
  }
}

// Both ranks recv from each other first (a deadlock in the user's order):
// each asks the other, both wait in send/recv — all-stuck, nobody missing.
TEST(Communicator, ADeadlockInWhichEveryRankWaitsIsAllStuck) {
  auto [errors, lines] = run_until_timeout(2, [](Communicator& comm) {
    std::vector<float> buffer(16);
    comm.recv(BufferRef(buffer.data()), 16, DType::kF32, 1 - comm.rank());
  });
  ASSERT_FALSE(lines.empty()) << errors[0] << "\n" << errors[1];
  for (auto& [r, line] : lines) {
    EXPECT_EQ(line["class"], "all-stuck") << line.dump();
    EXPECT_NE(errors[r].find("all-stuck: every rank waits in this very call"), std::string::npos)
        << errors[r];
  }
}

TEST(HangView, ClassesFollowWhereEveryRankWaits) {
  CallSignature sum16{1, 2, 0, -1, 16}, sum32{1, 2, 0, -1, 32};
  auto in_collective = [](uint64_t seq, CallSignature call) {
    WaitState w;
    w.answered = true;
    w.seq = seq;
    w.call = call;
    return w;
  };
  WaitState silent;
  const WaitState mine = in_collective(3, sum16);
  EXPECT_EQ(classify_hang(0, {mine, in_collective(3, sum16)}, 1).hang_class, "all-stuck");
  EXPECT_EQ(classify_hang(0, {mine, silent}, 1).hang_class, "missing-enter");
  EXPECT_EQ(classify_hang(0, {mine, in_collective(2, sum16)}, 1).hang_class, "missing-enter");
  EXPECT_EQ(classify_hang(0, {mine, in_collective(4, sum16)}, 1).hang_class, "missing-exit");
  // A mismatch names the other call, and outranks the other classes.
  HangView v = classify_hang(0, {mine, in_collective(3, sum32), silent}, 1);
  EXPECT_EQ(v.hang_class, "signature-mismatch");
  EXPECT_NE(v.text.find("count 32"), std::string::npos) << v.text;
  EXPECT_EQ(nlohmann::json::parse(v.json)["polychip_comm_hang"]["ranks"][2]["state"], "no-answer");
}

// The text names the ranks of the class and says where every other rank
// waits; the JSON line has every rank, with where it waits when it answered.
TEST(HangView, TextAndJsonSayWhereEveryRankWaits) {
  const CallSignature sum16{1, 2, 0, -1, 16};
  auto in_collective = [](uint64_t seq, CallSignature call) {
    WaitState w;
    w.answered = true;
    w.seq = seq;
    w.call = call;
    return w;
  };
  WaitState silent, mine = in_collective(3, sum16), in_send_recv;
  mine.answered = false;  // a rank does not ask itself
  in_send_recv.answered = true;
  in_send_recv.in = WaitingIn::kPointToPoint;
  const std::string call = describe_call(sum16);
  HangView v = classify_hang(0,
                             {mine, in_collective(2, sum16), silent, in_send_recv,
                              in_collective(3, sum16), in_collective(4, sum16)},
                             1.5);
  EXPECT_EQ(v.hang_class, "missing-enter");
  const std::string at2 = "collective #2 " + call, at3 = "collective #3 " + call,
                    at4 = "collective #4 " + call;
  EXPECT_EQ(v.text,
            " — job-wide view (every rank asked on the timeout): missing-enter: rank(s) "
            "1, 2, 3 never entered this call; rank 1 waits in an earlier " +
                at2 +
                ", so it never entered this one; rank 2 gave no answer within 1.5 s (not "
                "inside any polychip call: busy elsewhere, stopped, or hung in its own "
                "code); rank 3 waits in send/recv; rank 4 waits in the same call; rank 5 "
                "already left this call and waits in " +
                at4);
  auto rank = [](int r, const std::string& state, const std::string& waiting_in) {
    nlohmann::json j = {{"rank", r}, {"state", state}};
    if (!waiting_in.empty()) j["waiting_in"] = waiting_in;
    return j;
  };
  const nlohmann::json expected = {
      {"polychip_comm_hang",
       {{"rank", 0},
        {"class", "missing-enter"},
        {"waiting_in", at3},
        {"ranks",
         {rank(0, "timed-out", at3), rank(1, "behind", at2), rank(2, "no-answer", ""),
          rank(3, "elsewhere", "send/recv"), rank(4, "in-call", at3), rank(5, "ahead", at4)}}}}};
  EXPECT_EQ(nlohmann::json::parse(v.json), expected);
  // Nothing in it is escaped: the line is for grep as much as for a JSON parser.
  EXPECT_NE(v.json.find("\"waiting_in\":\"" + at3 + "\""), std::string::npos) << v.json;

  v = classify_hang(1, {in_collective(4, sum16), mine, in_collective(5, sum16)}, 1);
  EXPECT_EQ(v.hang_class, "missing-exit");
  EXPECT_NE(v.text.find("missing-exit: every rank entered this call; rank(s) 0, 2 left it"),
            std::string::npos)
      << v.text;
}

TEST(HangView, SendRecvWaitsMatchEachOtherButNoCollective) {
  WaitState me, peer, in_collective;
  me.in = peer.in = WaitingIn::kPointToPoint;
  peer.answered = in_collective.answered = true;
  peer.seq = 5;  // means nothing in send/recv
  in_collective.seq = 1;
  in_collective.call = {1, 2, 0, -1, 16};
  HangView v = classify_hang(1, {peer, me}, 1);
  EXPECT_EQ(v.hang_class, "all-stuck");
  EXPECT_NE(v.json.find("\"class\":\"all-stuck\",\"waiting_in\":\"send/recv\""), std::string::npos)
      << v.json;
  v = classify_hang(1, {in_collective, me}, 1);
  EXPECT_EQ(v.hang_class, "missing-enter");
  EXPECT_NE(v.text.find("rank 0 waits in collective #1 "), std::string::npos) << v.text;
}

TEST(Wire, StatusFramesSayWhereTheSenderWaitsAndNothingMore) {
  FrameHeader h;
  h.kind = FrameKind::kStatus;
  h.step = static_cast<uint32_t>(WaitingIn::kCollective);
  h.seq = 7;
  h.call = {1, 2, 0, -1, 16};
  uint8_t bytes[kFrameHeaderSize];
  encode_frame_header(h, bytes);
  EXPECT_EQ(parse_frame_header(bytes, 0).call, h.call);
  h.step = static_cast<uint32_t>(WaitingIn::kPointToPoint);  // send/recv has no call
  encode_frame_header(h, bytes);
  EXPECT_THROW(parse_frame_header(bytes, 0), Error);
  h.call = {};
  encode_frame_header(h, bytes);
  EXPECT_EQ(parse_frame_header(bytes, 0).kind, FrameKind::kStatus);
  h.payload_bytes = 4;
  encode_frame_header(h, bytes);
  EXPECT_THROW(parse_frame_header(bytes, 0), Error);
  h.payload_bytes = 0;
  h.step = 9;
  encode_frame_header(h, bytes);
  EXPECT_THROW(parse_frame_header(bytes, 0), Error);
}

TEST(Communicator, ThreadRanksRunEveryCollectiveExactly) {
  for (int world : {1, 3}) {
    with_threads(world, [](Communicator& comm) {
      CaseRunner runner(comm, nullptr);
      for (const std::string& c : collective_names()) {
        for (DType dt : {DType::kF32, DType::kBF16, DType::kI64}) {
          for (uint64_t bytes : {0ull, 24ull, 70000ull, 1200000ull}) {
            for (bool in_place : {false, true}) {
              CaseSpec spec{c, dt, ReduceOp::kSum, bytes, comm.size() - 1, in_place};
              EXPECT_EQ(runner.run(spec, 0, 0).wrong, 0u)
                  << c << " " << dtype_name(dt) << " " << bytes << " in_place " << in_place;
            }
          }
        }
      }
    });
  }
}

// Buffers in host memory one element into their allocation (comm-perf
// --offset without --devices): exact, and the guard bytes around them kept.
TEST(CaseRunner, OffsetHostBuffersAreExact) {
  with_threads(2, [](Communicator& comm) {
    CaseRunner runner(comm, nullptr);
    for (const std::string& c : collective_names())
      for (bool in_place : {false, true}) {
        CaseSpec spec{c, DType::kF32, ReduceOp::kSum, 4100, 1, in_place, 4};
        const CaseResult r = runner.run(spec, 0, 0);
        EXPECT_EQ(r.wrong, 0u) << c << " in_place " << in_place;
        EXPECT_EQ(r.outside, 0u) << c << " in_place " << in_place;
      }
  });
}

// nccl-tests' bus bandwidth factors (docs/comm.md): what comm-perf's busbw
// column and the benchmarks' ratios are computed with.
TEST(CaseRunner, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor("all_reduce", 4), 1.5);
  for (const char* c : {"all_gather", "reduce_scatter", "all_to_all"})
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(c, 4), 0.75) << c;
  for (const char* c : {"broadcast", "reduce", "send_recv"})
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(c, 4), 1.0) << c;
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor("all_reduce", 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor("all_gather", 2), 0.5);
}

// One verified call, then exactly `warmup` untimed and `iterations` timed
// ones; with no iterations, the verified call alone. A root outside the
// ranks is refused.
TEST(CaseRunner, RunsTheVerifiedCallThenWarmupThenTimedIterations) {
  with_threads(2, [](Communicator& comm) {
    CaseRunner runner(comm, nullptr);
    // Calls of `collective` in the history past its first `from` entries.
    auto calls_of = [&](const std::string& collective, size_t from) {
      const auto& history = comm.call_history();
      int n = 0;
      for (size_t i = from; i < history.size(); ++i) n += history[i].collective == collective;
      return n;
    };
    const CaseSpec spec{"all_reduce", DType::kF32, ReduceOp::kSum, 64, 0, false};
    size_t before = comm.call_history().size();
    EXPECT_EQ(runner.run(spec, 2, 3).wrong, 0u);
    EXPECT_EQ(calls_of("all_reduce", before), 1 + 2 + 3);
    before = comm.call_history().size();
    EXPECT_EQ(runner.run(spec, 2, 0).wrong, 0u);
    EXPECT_EQ(calls_of("all_reduce", before), 1);
    const CaseSpec bad_root{"broadcast", DType::kF32, ReduceOp::kSum, 64, 2, false};
    try {
      runner.run(bad_root, 0, 0);
      ADD_FAILURE() << "root 2 of 2 ranks was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("root 2 out of range"), std::string::npos) << e.what();
    }
  });
}

// A reduce_scatter whose output overlaps its input other than in place
// works from a copy of the input: one element past this rank's block, the
// ring would write chunk c's result over chunk c + 1's own part before it
// reads it (planted without the copy: that case fails on every rank). In
// place (this rank's block itself) works on the input directly.
TEST(Communicator, ReduceScatterIntoAnyPartOfItsOwnInputIsExact) {
  const int world = 3;
  const uint64_t count = 3 * (1 << 20) / sizeof(float) / 2;  // 1.5 MiB a block: two chunks
  CommConfig config;
  config.algorithm = "ring";
  with_threads(
      world,
      [&](Communicator& comm) {
        const int me = comm.rank(), n = comm.size();
        for (uint64_t shift : {uint64_t{0}, count, uint64_t{1}}) {
          std::vector<float> buffer(count * n + 1);
          for (uint64_t j = 0; j < count * n; ++j) buffer[j] = float(me * 1000 + j % 4096);
          // Past the last block the output wraps to the input's start.
          const uint64_t out_at = (uint64_t(me) * count + shift) % (count * n);
          float* out = buffer.data() + out_at;
          comm.reduce_scatter(BufferRef(buffer.data()), BufferRef(out), count, DType::kF32,
                              ReduceOp::kSum);
          uint64_t wrong = 0;
          for (uint64_t i = 0; i < count; ++i) {
            const float want = float((0 + 1000 + 2000) + 3 * ((uint64_t(me) * count + i) % 4096));
            wrong += out[i] != want;
          }
          EXPECT_EQ(wrong, 0u) << "rank " << me << ", output at element " << out_at
                               << " of the input, whose block starts at " << me * count;
        }
      },
      config);
}

TEST(Communicator, HierarchicalPathIsRecordedAndExact) {
  CommConfig config;
  config.path = "hierarchical";
  with_threads(
      4,
      [](Communicator& comm) {
        EXPECT_EQ(comm.island_count(), 2);
        CaseRunner runner(comm, nullptr);
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
          for (uint64_t bytes : {16ull, 3000000ull}) {
            CaseSpec spec{"all_reduce", DType::kF16, op, bytes, 0, false};
            CaseResult res = runner.run(spec, 0, 0);
            EXPECT_EQ(res.wrong, 0u);
            EXPECT_EQ(res.record.path, DataPath::kHierarchical);
          }
        }
      },
      config,
      [](int r, CommConfig& mine) { mine.device_type = r % 2 ? "sim.faithful" : "cpu.host"; });
}

// sim memory is not host visible and copies asynchronously on streams: the
// ring all-reduce takes its input to the host piece by piece and hands every
// result byte back to the device while the collective still runs.
TEST(Communicator, StagedAllReduceStreamsCopiesThroughTheRing) {
  const Device sim = Runtime::global().device("sim.faithful");
  CommConfig config;
  config.chunk_bytes = 256 << 10;
  config.staging = "overlap";  // sim copies with host cores: auto would not overlap
  with_threads(
      2,
      [&](Communicator& comm) {
        CaseRunner runner(comm, &sim);
        for (DType dt : {DType::kF32, DType::kBF16, DType::kI64}) {
          for (bool in_place : {false, true}) {
            CaseSpec spec{"all_reduce", dt, ReduceOp::kSum, 3000000, 0, in_place};
            CaseResult r = runner.run(spec, 0, 0);
            std::string what = std::string(dtype_name(dt)) + " in_place " + (in_place ? "1" : "0");
            EXPECT_EQ(r.wrong, 0u) << what;
            EXPECT_EQ(r.record.path, DataPath::kHostStaging) << what;
            EXPECT_EQ(r.record.algorithm, Algorithm::kRing) << what;
            EXPECT_GE(r.record.staged_input_pieces, 3000000u / (256 << 10)) << what;
            EXPECT_EQ(r.record.early_output_bytes, r.record.bytes) << what;
          }
        }
        // Small messages take the direct algorithm: whole input first, whole result after.
        CaseResult small =
            runner.run({"all_reduce", DType::kF32, ReduceOp::kSum, 4096, 0, false}, 0, 0);
        EXPECT_EQ(small.wrong, 0u);
        EXPECT_EQ(small.record.early_output_bytes, 0u);
      },
      config);
  // By default a device without a copy engine stages whole buffers.
  with_threads(2, [&](Communicator& comm) {
    CaseRunner runner(comm, &sim);
    CaseResult r = runner.run({"all_reduce", DType::kF32, ReduceOp::kSum, 3000000, 0, false}, 0, 0);
    EXPECT_EQ(r.wrong, 0u);
    EXPECT_EQ(r.record.staged_input_pieces, 0u);
    EXPECT_EQ(r.record.early_output_bytes, 0u);
  });
}

// Point-to-point on device memory goes through host staging like every
// collective, and its record says so.
TEST(Communicator, SendRecvOnDeviceMemoryIsStagedAndExact) {
  const Device sim = Runtime::global().device("sim.faithful");
  with_threads(2, [&](Communicator& comm) {
    CaseRunner runner(comm, &sim);
    for (uint64_t bytes : {24ull, 3000000ull}) {
      for (bool in_place : {false, true}) {
        CaseResult r =
            runner.run({"send_recv", DType::kF32, ReduceOp::kSum, bytes, 0, in_place}, 0, 0);
        EXPECT_EQ(r.wrong, 0u) << bytes << " in_place " << in_place;
        EXPECT_EQ(r.record.path, DataPath::kHostStaging) << bytes << " in_place " << in_place;
      }
    }
  });
  with_threads(2, [&](Communicator& comm) {
    CaseRunner runner(comm, nullptr);
    CaseResult r = runner.run({"send_recv", DType::kF32, ReduceOp::kSum, 4096, 0, false}, 0, 0);
    EXPECT_EQ(r.wrong, 0u);
    EXPECT_EQ(r.record.path, DataPath::kHost);
  });
}

// Host staging on its own: sim memory is staged (not host visible, copied
// asynchronously on streams), cpu memory and host pointers are used in place.
class StagingTest : public ::testing::Test {
 protected:
  // A sim buffer of `bytes` holding 0, 1, 2, ... (mod 256).
  Buffer sim_ramp(uint64_t bytes) const {
    Buffer b(sim, bytes);
    b.copy_from_host(ramp(bytes).data(), bytes);
    return b;
  }
  static std::vector<uint8_t> ramp(uint64_t bytes) {
    std::vector<uint8_t> v(bytes);
    for (uint64_t i = 0; i < bytes; ++i) v[i] = static_cast<uint8_t>(i);
    return v;
  }
  static std::vector<uint8_t> contents(const Buffer& b) {
    std::vector<uint8_t> v(b.size());
    b.copy_to_host(v.data(), v.size());
    return v;
  }

  const Device sim = Runtime::global().device("sim.faithful");
  const Device cpu = Runtime::global().device("cpu");
  Staging staging;
  std::vector<Staging::Lease> leases;  // destroyed before `staging`, which they return to
};

TEST_F(StagingTest, CpuMemoryIsUsedInPlaceFromItsOffsetSimMemoryIsStaged) {
  Buffer on_cpu(cpu, 64), on_sim(sim, 64);
  EXPECT_TRUE(staging.host_visible(BufferRef(on_cpu)));
  EXPECT_FALSE(staging.staged(BufferRef(on_cpu)));
  EXPECT_TRUE(staging.staged(BufferRef(on_sim)));
  uint8_t* base = static_cast<uint8_t*>(on_cpu.host_pointer());
  EXPECT_EQ(staging.input(BufferRef(on_cpu, 16), 48, leases), base + 16);
  EXPECT_EQ(staging.output(BufferRef(on_cpu, 8), 56, leases), base + 8);
  EXPECT_TRUE(leases.empty());
}

// A buffer that cannot hold the call is refused naming what it holds; one
// that holds exactly enough is taken, and a NULL host pointer is fine for 0 bytes.
TEST_F(StagingTest, BuffersAreCheckedAgainstTheBytesTheCallNeeds) {
  Buffer sixteen(sim, 16), none;
  const std::string label = sim.label();
  const std::vector<std::pair<BufferRef, uint64_t>> fit = {
      {BufferRef(sixteen, 8), 8}, {BufferRef(static_cast<void*>(nullptr)), 0}};
  for (const auto& [b, bytes] : fit) EXPECT_NO_THROW(staging.input(b, bytes, leases)) << bytes;
  const std::vector<std::tuple<BufferRef, uint64_t, std::string>> refused = {
      {BufferRef(sixteen, 8), 9,
       "buffer on " + label + " holds 8 bytes from its offset, the collective needs 9"},
      {BufferRef(static_cast<void*>(nullptr)), 4, "buffer: null host pointer for 4 bytes"},
      {BufferRef(none), 4, "buffer: null device memory"},
  };
  for (const auto& [b, bytes, message] : refused) {
    for (bool input : {true, false}) {
      try {
        input ? staging.input(b, bytes, leases) : staging.output(b, bytes, leases);
        ADD_FAILURE() << message << ": accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.message(), message);
        EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << message;
      }
    }
  }
}

// A lease takes the smallest pooled buffer that fits (its pages are already
// faulted in), an exact fit included; a buffer that is still pooled cannot
// be a fresh allocation, so the pointers tell which one was taken.
TEST_F(StagingTest, ALeaseReusesTheSmallestPooledBufferThatFits) {
  const uint64_t sizes[] = {300, 100, 200};
  std::vector<Staging::Lease> held[3];
  std::map<uint64_t, uint8_t*> pooled;
  for (int k = 0; k < 3; ++k) pooled[sizes[k]] = staging.lease(sizes[k], held[k]);
  for (auto& lease : held) lease.clear();  // pooled in this order: 300, 100, 200
  EXPECT_EQ(staging.lease(150, leases), pooled[200]);
  EXPECT_EQ(staging.lease(250, leases), pooled[300]);
  EXPECT_EQ(staging.lease(100, leases), pooled[100]);
}

// Returned buffers beyond four give the smallest back to the allocator.
TEST_F(StagingTest, ThePoolKeepsTheFourLargestReturnedBuffers) {
  std::map<uint64_t, uint8_t*> leased;
  {
    std::vector<Staging::Lease> five;
    for (uint64_t bytes : {1000, 2000, 3000, 4000, 5000})
      leased[bytes] = staging.lease(bytes, five);
  }
  for (uint64_t bytes : {2000, 3000, 4000, 5000})
    EXPECT_EQ(staging.lease(bytes, leases), leased[bytes]) << bytes;
}

// Input and copy_back move exactly the call's bytes, from and to the
// buffer's offset; the rest of the device memory stays as it was.
TEST_F(StagingTest, StagedBytesComeFromAndGoBackToTheBuffersOffset) {
  Buffer b = sim_ramp(64);
  const uint8_t* host = staging.input(BufferRef(b, 8), 16, leases);
  std::vector<uint8_t> want = ramp(64);
  EXPECT_EQ(std::vector<uint8_t>(host, host + 16),
            std::vector<uint8_t>(want.begin() + 8, want.begin() + 24));
  const std::vector<uint8_t> result(16, 0xee);
  staging.copy_back(BufferRef(b, 8), result.data(), result.size());
  std::fill(want.begin() + 8, want.begin() + 24, 0xee);
  EXPECT_EQ(contents(b), want);
}

// copy_on_device (the GDR path's local copy) reads from the source's offset
// and writes at the target's offset plus `to_offset`; 0 bytes copy nothing.
TEST_F(StagingTest, ACopyOnOneDeviceLandsAtTheTargetsOffset) {
  Buffer from = sim_ramp(64), to(sim, 64);
  const std::vector<uint8_t> zeros(64, 0);
  to.copy_from_host(zeros.data(), zeros.size());
  staging.copy_on_device(BufferRef(from, 8), BufferRef(to, 16), 4, 12, nullptr);
  const std::vector<uint8_t> source = ramp(64);
  std::vector<uint8_t> want = zeros;
  std::copy(source.begin() + 8, source.begin() + 20, want.begin() + 20);
  EXPECT_EQ(contents(to), want);
}

// With overlap the input comes over in pieces of piece_bytes, the last one
// shorter, and no empty piece past the end when the size is a multiple.
TEST_F(StagingTest, AStreamedInputComesInPiecesOfThePieceSize) {
  for (uint64_t bytes : {64, 70}) {
    Buffer send = sim_ramp(bytes);
    StreamedStaging io(staging, 16, /*overlap=*/true);
    const uint8_t* in = io.input(BufferRef(send), bytes);
    EXPECT_EQ(io.input_pieces(), (bytes + 15) / 16) << bytes;
    io.wait_all_input();
    EXPECT_EQ(std::vector<uint8_t>(in, in + bytes), ramp(bytes)) << bytes;
    io.finish();
  }
}

// wait_input waits only for ranges that overlap the staged input: one that
// ends where the input begins or begins where it ends is another buffer's
// (left alone), one that runs past the input's end waits for the last piece.
TEST_F(StagingTest, OnlyRangesOverlappingTheStagedInputWaitForIt) {
  Buffer send = sim_ramp(64);
  StreamedStaging io(staging, 16, /*overlap=*/true);
  const uint8_t* in = io.input(BufferRef(send), 64);
  EXPECT_NO_THROW(io.wait_input(in - 8, 8));
  EXPECT_NO_THROW(io.wait_input(in + 64, 8));
  EXPECT_NO_THROW(io.wait_input(in + 56, 16));
  // Pieces complete in order on one stream: the last one brings them all.
  EXPECT_EQ(std::vector<uint8_t>(in, in + 64), ramp(64));
  io.finish();
}

// A host input beside a staged output (overlap on): the input is used in
// place, not streamed; the output range marked final goes back early and
// finish() sends the rest.
TEST_F(StagingTest, AStreamedCallMixesAHostInputWithAStagedOutput) {
  std::vector<uint8_t> send = ramp(40);
  Buffer recv(sim, 40);
  StreamedStaging io(staging, 16, /*overlap=*/true);
  const uint8_t* in = io.input(BufferRef(send.data()), send.size());
  EXPECT_EQ(in, send.data());
  EXPECT_EQ(io.input_pieces(), 0u);
  uint8_t* out = io.output(BufferRef(recv), send.size(), /*in_place=*/false);
  std::copy(in, in + send.size(), out);
  io.output_final(out + 16, 16);
  io.finish();
  EXPECT_EQ(io.early_output_bytes(), 16u);
  EXPECT_EQ(contents(recv), send);
}

// abort() between calls (no call running) fails the transport at once:
// the aborting rank's next call raises ABORTED with the reason (the calls
// publish themselves to abort() without a mutex), the peer's names it too.
// The ranks meet outside the communicator before the abort: rank 0 leaves
// its first call as soon as it holds rank 1's data, and an abort that
// reaches rank 1 still inside that call ends it instead (as it should).
TEST(Communicator, AnAbortBetweenCallsEndsTheNextCallOnEveryRank) {
  std::barrier both_done_with_the_first_call(2);
  with_threads(2, [&](Communicator& comm) {
    float in[2] = {1, 2}, out[2] = {};
    comm.all_reduce(in, out, 2, DType::kF32, ReduceOp::kSum);
    EXPECT_TRUE(comm.last_call().mailbox);
    both_done_with_the_first_call.arrive_and_wait();
    if (comm.rank() == 0) comm.abort("stop between calls");
    try {
      comm.all_reduce(in, out, 2, DType::kF32, ReduceOp::kSum);
      ADD_FAILURE() << "rank " << comm.rank() << ": the call after an abort() succeeded";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("stop between calls"), std::string::npos) << what;
      if (comm.rank() == 0) {
        EXPECT_EQ(e.code(), StatusCode::kAborted) << what;
        EXPECT_NE(what.find("failed earlier"), std::string::npos) << what;
      }
    }
  });
}

// Many small frames arrive in one burst on one TCP socket: the inbox reads
// them at once, more than one pass of the frame parser handles; the event
// loop must read on though poll() sees nothing left on the socket.
TEST(Communicator, ABurstOfSmallFramesOnOneSocketIsReadToTheEnd) {
  CommConfig config;
  config.transport = "tcp";
  config.sockets_per_peer = 1;
  with_threads(
      2,
      [&](Communicator& comm) {
        constexpr int kMessages = 200;
        std::vector<int64_t> mine(kMessages), theirs(kMessages, -1);
        for (int i = 0; i < kMessages; ++i) mine[i] = 1000 * comm.rank() + i;
        const int peer = 1 - comm.rank();
        const auto start = std::chrono::steady_clock::now();
        for (int round = 0; round < 3; ++round) {
          comm.group_start();
          for (int i = 0; i < kMessages; ++i) comm.send(&mine[i], 1, DType::kI64, peer);
          for (int i = 0; i < kMessages; ++i) comm.recv(&theirs[i], 1, DType::kI64, peer);
          comm.group_end();
          for (int i = 0; i < kMessages; ++i) ASSERT_EQ(theirs[i], 1000 * peer + i) << i;
        }
        // An event loop that sleeps in poll() with bytes left in an inbox
        // waits for the next thing on the socket (a status frame, ~1 s
        // later): planted, these rounds took 90 s.
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                  10)
            << "the event loop slept on bytes already read";
        EXPECT_EQ(comm.last_call().transport, "tcp");
      },
      config);
}

TEST(Communicator, ChecksumModeRunsAndBadArgumentsAreNamed) {
  for (std::string transport : {"auto", "tcp"}) {
    CommConfig config;
    config.checksum = true;
    config.transport = transport;
    with_threads(
        2,
        [&](Communicator& comm) {
          std::vector<float> a(300000, 1.0f), b(300000);
          comm.all_reduce(a.data(), b.data(), a.size(), DType::kF32, ReduceOp::kSum);
          EXPECT_EQ(b[12345], 2.0f);
          EXPECT_EQ(comm.last_call().transport, transport == "tcp" ? "tcp+crc32c" : "shm+crc32c");
          try {
            comm.broadcast(a.data(), b.data(), 1, DType::kF32, 7);
            ADD_FAILURE() << "bad root accepted";
          } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("root 7"), std::string::npos);
          }
          EXPECT_THROW(comm.all_reduce(a.data(), b.data(), 1, DType::kU8, ReduceOp::kSum), Error);
        },
        config);
  }
}

// A training job makes millions of calls: the history keeps the latest
// (at least 1024) with their place among all calls, not every one.
TEST(Communicator, CallHistoryKeepsTheLatestCallsWithTheirSequenceNumbers) {
  with_threads(2, [](Communicator& comm) {
    float x = 1.0f, y = 0.0f;
    for (int i = 0; i < 5000; ++i) comm.all_reduce(&x, &y, 1, DType::kF32, ReduceOp::kSum);
    comm.broadcast(&x, &y, 1, DType::kF32, 1);
    const std::vector<CallRecord>& history = comm.call_history();
    EXPECT_GE(history.size(), 1024u);
    EXPECT_LE(history.size(), 2048u);
    EXPECT_EQ(history.back().seq, 5000u);
    EXPECT_EQ(history.back().collective, "broadcast");
    EXPECT_EQ(comm.last_call().root, 1);
    for (size_t i = 1; i < history.size(); ++i) ASSERT_EQ(history[i].seq, history[i - 1].seq + 1);
  });
}

// Ranks as threads of this process, each holding its communicator through
// the C ABI, as a framework does.
void with_c_ranks(int world, const std::function<void(polychip_comm*, int rank)>& body) {
  polychip_comm_unique_id id;
  ASSERT_EQ(polychip_comm_get_unique_id(&id), POLYCHIP_OK) << polychip_comm_last_error();
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      polychip_comm* comm = nullptr;
      ASSERT_EQ(polychip_comm_init_rank(&comm, &id, r, world), POLYCHIP_OK)
          << polychip_comm_last_error();
      body(comm, r);
      EXPECT_EQ(polychip_comm_destroy(comm), POLYCHIP_OK);
    });
  }
  for (auto& t : threads) t.join();
}

TEST(CApi, SingleRankAllReduceAndItsRecord) {
  with_c_ranks(1, [](polychip_comm* comm, int) {
    int size = 0;
    EXPECT_EQ(polychip_comm_size(comm, &size), POLYCHIP_OK);
    EXPECT_EQ(size, 1);
    double in[3] = {1, 2, 3}, out[3] = {0, 0, 0};
    EXPECT_EQ(polychip_comm_all_reduce(comm, in, out, 3, POLYCHIP_DTYPE_F64, POLYCHIP_COMM_SUM),
              POLYCHIP_OK);
    EXPECT_EQ(out[2], 3.0);
    char how[64];
    EXPECT_EQ(polychip_comm_last_call(comm, how, sizeof(how)), POLYCHIP_OK);
    EXPECT_STREQ(how, "none/host/local");
  });
}

// The C ABI's collectives on three ranks: every rank holds kCWorld blocks of
// kCBlock doubles, element i of rank r being 100 r + i, so each output
// element tells whose input, and which element of it, arrived there.
constexpr int kCWorld = 3;
constexpr uint64_t kCBlock = 2;
constexpr uint64_t kCElements = kCWorld * kCBlock;
constexpr double kUntouched = -1;  // what every output element holds before the call

double c_input(int rank, uint64_t i) { return 100.0 * rank + static_cast<double>(i); }

double c_sum(uint64_t i) {
  double sum = 0;
  for (int r = 0; r < kCWorld; ++r) sum += c_input(r, i);
  return sum;
}

struct CApiCollective {
  const char* name;
  std::function<polychip_status(polychip_comm*, int rank, const double* send, double* recv)> call;
  // Element i of rank `rank`'s output after the call; nullopt: not looked at.
  std::function<std::optional<double>(int rank, uint64_t i)> want;
};

const std::vector<CApiCollective>& c_api_collectives() {
  using Want = std::optional<double>;
  static const std::vector<CApiCollective> table = {
      {"all_reduce sum",
       [](polychip_comm* c, int, const double* s, double* r) {
         return polychip_comm_all_reduce(c, s, r, kCElements, POLYCHIP_DTYPE_F64,
                                         POLYCHIP_COMM_SUM);
       },
       [](int, uint64_t i) -> Want { return c_sum(i); }},
      {"all_gather",
       [](polychip_comm* c, int, const double* s, double* r) {
         return polychip_comm_all_gather(c, s, r, kCBlock, POLYCHIP_DTYPE_F64);
       },
       [](int, uint64_t i) -> Want { return c_input(int(i / kCBlock), i % kCBlock); }},
      // avg is the last op code: the range check must let it through
      {"reduce_scatter avg",
       [](polychip_comm* c, int, const double* s, double* r) {
         return polychip_comm_reduce_scatter(c, s, r, kCBlock, POLYCHIP_DTYPE_F64,
                                             POLYCHIP_COMM_AVG);
       },
       [](int rank, uint64_t i) -> Want {
         return i < kCBlock ? c_sum(rank * kCBlock + i) / kCWorld : kUntouched;
       }},
      {"broadcast from rank 1",
       [](polychip_comm* c, int, const double* s, double* r) {
         return polychip_comm_broadcast(c, s, r, kCElements, POLYCHIP_DTYPE_F64, 1);
       },
       [](int, uint64_t i) -> Want { return c_input(1, i); }},
      // only the root's output is defined
      {"reduce max to rank 2",
       [](polychip_comm* c, int, const double* s, double* r) {
         return polychip_comm_reduce(c, s, r, kCElements, POLYCHIP_DTYPE_F64, POLYCHIP_COMM_MAX, 2);
       },
       [](int rank, uint64_t i) -> Want {
         return rank == 2 ? Want(c_input(kCWorld - 1, i)) : std::nullopt;
       }},
      {"all_to_all",
       [](polychip_comm* c, int, const double* s, double* r) {
         return polychip_comm_all_to_all(c, s, r, kCBlock, POLYCHIP_DTYPE_F64);
       },
       [](int rank, uint64_t i) -> Want {
         return c_input(int(i / kCBlock), rank * kCBlock + i % kCBlock);
       }},
      {"send to the next rank and recv from the previous one, grouped",
       [](polychip_comm* c, int rank, const double* s, double* r) -> polychip_status {
         const int next = (rank + 1) % kCWorld, previous = (rank + kCWorld - 1) % kCWorld;
         // (a braced list runs its calls in order)
         for (polychip_status status :
              {polychip_comm_group_start(c),
               polychip_comm_send(c, s, kCElements, POLYCHIP_DTYPE_F64, next),
               polychip_comm_recv(c, r, kCElements, POLYCHIP_DTYPE_F64, previous),
               polychip_comm_group_end(c)}) {
           if (status != POLYCHIP_OK) return status;
         }
         return POLYCHIP_OK;
       },
       [](int rank, uint64_t i) -> Want { return c_input((rank + kCWorld - 1) % kCWorld, i); }},
  };
  return table;
}

// Each argument reaches the communicator in its place: the input read,
// the output written, the count, dtype, op and root as given.
TEST(CApi, EveryCollectiveGivesEveryRankItsExactResult) {
  with_c_ranks(kCWorld, [](polychip_comm* comm, int rank) {
    int my_rank = -1, size = -1;
    EXPECT_EQ(polychip_comm_rank(comm, &my_rank), POLYCHIP_OK);
    EXPECT_EQ(polychip_comm_size(comm, &size), POLYCHIP_OK);
    EXPECT_EQ(my_rank, rank);
    EXPECT_EQ(size, kCWorld);
    for (const CApiCollective& c : c_api_collectives()) {
      std::vector<double> send(kCElements), recv(kCElements, kUntouched);
      for (uint64_t i = 0; i < kCElements; ++i) send[i] = c_input(rank, i);
      EXPECT_EQ(c.call(comm, rank, send.data(), recv.data()), POLYCHIP_OK)
          << c.name << ": " << polychip_comm_last_error();
      for (uint64_t i = 0; i < kCElements; ++i) {
        const std::optional<double> want = c.want(rank, i);
        if (want) {
          EXPECT_EQ(recv[i], *want) << c.name << ", rank " << rank << ", element " << i;
        }
      }
    }
  });
}

// Bad arguments come back as INVALID_ARGUMENT with a message naming them,
// never as a crash (a NULL communicator or out-parameter) or a call that
// runs with a code the communicator does not know.
TEST(CApi, BadArgumentsAreRefusedByName) {
  with_c_ranks(1, [](polychip_comm* live, int) {
    polychip_comm_unique_id id;
    ASSERT_EQ(polychip_comm_get_unique_id(&id), POLYCHIP_OK);
    polychip_comm* made = nullptr;
    double x = 1, y = 0;
    int n = 0;
    char text[8];
    const double* in = &x;
    const std::vector<std::pair<std::string, std::function<polychip_status()>>> calls = {
        {"id is NULL", [] { return polychip_comm_get_unique_id(nullptr); }},
        {"comm or id is NULL", [&] { return polychip_comm_init_rank(nullptr, &id, 0, 1); }},
        {"comm or id is NULL", [&] { return polychip_comm_init_rank(&made, nullptr, 0, 1); }},
        {"comm is NULL", [] { return polychip_comm_init_from_environment(nullptr); }},
        {"comm is NULL", [] { return polychip_comm_abort(nullptr, "why"); }},
        {"comm is NULL", [&] { return polychip_comm_rank(nullptr, &n); }},
        {"comm is NULL", [&] { return polychip_comm_size(nullptr, &n); }},
        {"comm is NULL",
         [&] { return polychip_comm_all_reduce(nullptr, in, &y, 1, POLYCHIP_DTYPE_F64, 0); }},
        {"comm is NULL",
         [&] { return polychip_comm_all_gather(nullptr, in, &y, 1, POLYCHIP_DTYPE_F64); }},
        {"comm is NULL",
         [&] { return polychip_comm_reduce_scatter(nullptr, in, &y, 1, POLYCHIP_DTYPE_F64, 0); }},
        {"comm is NULL",
         [&] { return polychip_comm_broadcast(nullptr, in, &y, 1, POLYCHIP_DTYPE_F64, 0); }},
        {"comm is NULL",
         [&] { return polychip_comm_reduce(nullptr, in, &y, 1, POLYCHIP_DTYPE_F64, 0, 0); }},
        {"comm is NULL",
         [&] { return polychip_comm_all_to_all(nullptr, in, &y, 1, POLYCHIP_DTYPE_F64); }},
        {"comm is NULL", [&] { return polychip_comm_send(nullptr, in, 1, POLYCHIP_DTYPE_F64, 0); }},
        {"comm is NULL", [&] { return polychip_comm_recv(nullptr, &y, 1, POLYCHIP_DTYPE_F64, 0); }},
        {"comm is NULL", [] { return polychip_comm_group_start(nullptr); }},
        {"comm is NULL", [] { return polychip_comm_group_end(nullptr); }},
        {"comm is NULL", [&] { return polychip_comm_last_call(nullptr, text, sizeof(text)); }},
        {"rank is NULL", [&] { return polychip_comm_rank(live, nullptr); }},
        {"size is NULL", [&] { return polychip_comm_size(live, nullptr); }},
        {"text is NULL but size is 8", [&] { return polychip_comm_last_call(live, nullptr, 8); }},
        {"dtype code 12345 is not a polychip dtype",
         [&] { return polychip_comm_all_reduce(live, in, &y, 1, 12345, POLYCHIP_COMM_SUM); }},
        {"op code -1 is not a polychip_comm_op",
         [&] { return polychip_comm_all_reduce(live, in, &y, 1, POLYCHIP_DTYPE_F64, -1); }},
        {"op code 5 is not a polychip_comm_op",
         [&] { return polychip_comm_all_reduce(live, in, &y, 1, POLYCHIP_DTYPE_F64, 5); }},
    };
    for (const auto& [message, call] : calls) {
      EXPECT_EQ(call(), POLYCHIP_INVALID_ARGUMENT) << message;
      EXPECT_EQ(std::string(polychip_comm_last_error()), "INVALID_ARGUMENT: " + message);
    }
    EXPECT_EQ(made, nullptr);
  });
}

// last_call writes at most `size` bytes, the NUL included, and nothing past
// them; with size 0 it writes nothing (text may then be NULL).
TEST(CApi, LastCallWritesAtMostSizeBytesWithTheNul) {
  with_c_ranks(1, [](polychip_comm* comm, int) {
    const std::string record = "none/host/local";
    double x = 1, y = 0;
    ASSERT_EQ(polychip_comm_all_reduce(comm, &x, &y, 1, POLYCHIP_DTYPE_F64, POLYCHIP_COMM_SUM),
              POLYCHIP_OK);
    EXPECT_EQ(polychip_comm_last_call(comm, nullptr, 0), POLYCHIP_OK);
    for (size_t size : {0, 1, 5, 15, 16, 32}) {
      std::string text(40, '#');
      ASSERT_EQ(polychip_comm_last_call(comm, text.data(), size), POLYCHIP_OK) << size;
      const std::string written = size > 0 ? std::string(text.c_str()) : "";
      EXPECT_EQ(written, record.substr(0, size > 0 ? size - 1 : 0)) << "size " << size;
      EXPECT_EQ(text.substr(size), std::string(text.size() - size, '#')) << "past size " << size;
    }
  });
}

// An abort without a reason gives one: the next call fails ABORTED saying
// "abort requested"; with a reason, that reason. One rank, whose calls never
// run a transport plan: they went on after an abort() until they checked.
TEST(CApi, AbortEndsTheNextCallWithItsReason) {
  for (const char* reason : {static_cast<const char*>(nullptr), "stopped by the test"}) {
    with_c_ranks(1, [&](polychip_comm* comm, int) {
      EXPECT_EQ(polychip_comm_abort(comm, reason), POLYCHIP_OK);
      double x = 1, y = 0;
      EXPECT_EQ(polychip_comm_all_reduce(comm, &x, &y, 1, POLYCHIP_DTYPE_F64, POLYCHIP_COMM_SUM),
                POLYCHIP_ABORTED);
      const std::string error = polychip_comm_last_error();
      EXPECT_NE(error.find(reason ? reason : "abort requested"), std::string::npos) << error;
    });
  }
}

}  // namespace
