// The GDR path's pieces in one process: call offers on the wire, the
// set-up's agreement on one provider, and the ring itself between a cpu and
// a sim device, each progressed by its own thread as two ranks' would be.
// Under mpirun: comm_process_test's CommOverGdr.
#include "algorithms/gdr_ring.hpp"
#include "transport/rdma/gdr_endpoint.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "polychip/error.hpp"
#include "polychip/runtime.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);
extern "C" const polychip_adapter_api* polychip_sim_adapter_get_api(void);

namespace polychip::comm {
namespace {

TEST(GdrCallOffer, RoundTripsAndRefusesWhatIsNoOffer) {
  CallOffer offer;
  offer.eligible = true;
  offer.recv = {0x1000, 7, 4096};
  offer.scratch = {0x2000, 8, 8192};
  offer.credit = {0x3000, 9, 8};
  std::vector<uint8_t> bytes = offer.encode();
  ASSERT_EQ(bytes.size(), CallOffer::kBytes);
  const CallOffer back = CallOffer::decode(bytes.data());
  EXPECT_TRUE(back.eligible);
  EXPECT_EQ(back.recv.address, 0x1000u);
  EXPECT_EQ(back.scratch.key, 8u);
  EXPECT_EQ(back.credit.size, 8u);
  bytes[0] ^= 1;
  EXPECT_THROW(CallOffer::decode(bytes.data()), Error);
  bytes[0] ^= 1;
  bytes[4] = 2;  // eligibility is 0 or 1
  try {
    CallOffer::decode(bytes.data());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDataCorruption);
  }
}

TEST(GdrEndpointOffers, ThePathIsOnOnlyWhenEveryRankOfferedOneProvider) {
  GdrEndpoint a("shm", ""), b("shm", "");
  EXPECT_EQ(GdrEndpoint::why_not({a.offer(), b.offer()}), "");
  EXPECT_EQ(GdrEndpoint::why_not({a.offer(), GdrEndpoint::no_offer("not asked for")}),
            "rank 1 has no GDR endpoint (not asked for)");
  GdrEndpoint c("tcp;ofi_rxm", "127.0.0.1");
  EXPECT_EQ(GdrEndpoint::why_not({a.offer(), b.offer(), c.offer()}),
            "rank 0 offered provider shm and rank 2 provider tcp;ofi_rxm");
  EXPECT_EQ(GdrEndpoint::why_not({a.offer(), "gdr1 shm"}),
            "rank 1 has no GDR endpoint (a malformed offer)");
}

class GdrRingTest : public ::testing::TestWithParam<const char*> {
 protected:
  GdrRingTest() : runtime_(options()) {}
  static RuntimeOptions options() {
    RuntimeOptions o;
    o.builtin_adapters = {&polychip_cpu_adapter_get_api, &polychip_sim_adapter_get_api};
    return o;
  }
  std::string node() const { return std::string(GetParam()) == "shm" ? "" : "127.0.0.1"; }
  Runtime runtime_;
};

// Rank 0 on cpu, rank 1 on sim: 2 ranks, an odd count (chunks of unequal
// size) in slices of 4 KiB; each ends with the bitwise-same sum.
TEST_P(GdrRingTest, TwoRanksOnDifferentAdaptersEndWithTheSameSum) {
  const Device devices[2] = {runtime_.device("cpu"), runtime_.device("sim.faithful")};
  const uint64_t count = 10001;
  std::vector<std::unique_ptr<GdrEndpoint>> endpoints;
  for (int r = 0; r < 2; ++r)
    endpoints.push_back(std::make_unique<GdrEndpoint>(GetParam(), node()));
  const std::vector<std::string> offers = {endpoints[0]->offer(), endpoints[1]->offer()};
  std::vector<Buffer> send, recv;
  send.reserve(2);  // BufferRefs point at the buffers' devices
  recv.reserve(2);
  std::vector<CallOffer> call(2);
  std::vector<GdrRingArgs> args(2);
  std::vector<std::unique_ptr<Stream>> streams;
  for (int r = 0; r < 2; ++r) {
    endpoints[r]->connect(r, offers);
    std::vector<float> input(count);
    for (uint64_t i = 0; i < count; ++i) input[i] = static_cast<float>(i % 97) * (r + 1) + 0.25f;
    send.emplace_back(devices[r], count * 4);
    recv.emplace_back(devices[r], count * 4);
    send[r].copy_from_host(input.data(), count * 4);
    streams.push_back(std::make_unique<Stream>(devices[r]));
    GdrRingArgs& a = args[r];
    a.rank = r;
    a.world = 2;
    a.seq = 5;
    a.dtype = DType::kF32;
    a.count = count;
    a.slice_bytes = 4096;
    a.send = BufferRef(send[r]);
    a.recv = BufferRef(recv[r]);
    endpoints[r]->register_buffer(a.send, count * 4, &a.send_local);
    call[r].recv = endpoints[r]->register_buffer(a.recv, count * 4, &a.recv_local);
    a.scratch = &endpoints[r]->scratch(devices[r], count * 4, &call[r].scratch);
    call[r].credit = endpoints[r]->credit_region();
    call[r].eligible = true;
    a.stream = streams[r].get();
  }
  std::vector<std::thread> ranks;
  std::vector<std::string> errors(2);
  for (int r = 0; r < 2; ++r) {
    args[r].next = args[r].prev = call[1 - r];
    ranks.emplace_back([&, r] {
      try {
        GdrRing ring(*endpoints[r], args[r]);
        bool moved = false;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!ring.progress(&moved)) {
          if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("timed out");
        }
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  ASSERT_EQ(errors, (std::vector<std::string>{"", ""}));
  std::vector<float> got[2];
  for (int r = 0; r < 2; ++r) {
    got[r].resize(count);
    recv[r].copy_to_host(got[r].data(), count * 4);
    endpoints[r]->release();
  }
  EXPECT_EQ(got[0], got[1]) << "bitwise the same on both ranks";
  for (uint64_t i = 0; i < count; ++i)
    ASSERT_EQ(got[0][i], static_cast<float>(i % 97) * 3 + 0.5f) << "element " << i;
}

// A remote write whose notice belongs to no step of the call (another
// collective's, or forged) fails the call instead of being counted.
TEST_P(GdrRingTest, ANoticeOfNoStepIsDataCorruption) {
  const Device device = runtime_.device("sim.faithful");
  GdrEndpoint target(GetParam(), node()), writer(GetParam(), node());
  target.connect(0, {target.offer(), writer.offer()});
  writer.connect(1, {target.offer(), writer.offer()});
  Buffer send(device, 64), recv(device, 64);
  Stream stream(device);
  GdrRingArgs a;
  a.world = 2;
  a.seq = 9;
  a.count = 16;
  a.send = BufferRef(send);
  a.recv = BufferRef(recv);
  CallOffer mine;
  target.register_buffer(a.send, 64, &a.send_local);
  mine.recv = target.register_buffer(a.recv, 64, &a.recv_local);
  a.scratch = &target.scratch(device, 64, &mine.scratch);
  mine.credit = target.credit_region();
  a.stream = &stream;
  // The writer's side needs no ring: it writes 8 bytes with a notice of seq 8.
  std::vector<uint8_t> source(8, 1);
  writer.fabric().register_memory(source.data(), source.size());
  const uint64_t stale = (uint64_t{1} << 30) | 8;  // scatter data, step 0, slice 0, seq 8
  std::thread stale_writer(
      [&] { writer.fabric().write(writer.peer(0), source.data(), 8, mine.scratch, 0, stale, 20); });
  // Rank 0's ring never gets its own writes through (there is no rank 1
  // ring): only the stale notice arrives.
  a.next = a.prev = mine;
  GdrRing ring(target, a);
  bool moved = false;
  try {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) ring.progress(&moved);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDataCorruption);
    EXPECT_NE(e.message().find("GDR ring #9: a remote write announced 0x40000008"),
              std::string::npos)
        << e.message();
  }
  stale_writer.join();
  target.release();
}

INSTANTIATE_TEST_SUITE_P(Providers, GdrRingTest, ::testing::Values("tcp;ofi_rxm", "shm"),
                         [](const auto& info) {
                           return std::string(info.param) == "shm" ? "shm" : "tcp_rxm";
                         });

}  // namespace
}  // namespace polychip::comm
