// The GDR path's pieces in one process: call offers on the wire, the
// set-up's agreement on one provider, and the ring itself among 2-4 cpu and
// sim devices (every collective, every root, uneven chunks and slices down
// to one element, results checked against the ring's order of additions,
// no write left uncounted, forged notices refused, no ring done on a notice
// of its last step alone), each rank progressed by its own thread as ranks'
// would be. Under mpirun: comm_process_test's CommOverGdr.
#include "algorithms/gdr_ring.hpp"
#include "transport/rdma/gdr_endpoint.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "polychip/error.hpp"
#include "polychip/runtime.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);
extern "C" const polychip_adapter_api* polychip_sim_adapter_get_api(void);

namespace polychip::comm {
namespace {

// Exports and registers `b` for one call, as the communicator does.
RemoteRegion register_for_call(GdrEndpoint& endpoint, const BufferRef& b, uint64_t bytes,
                               void** local) {
  GdrEndpoint::CallBuffer exported;
  const std::string why = endpoint.export_for_call(b, bytes, &exported);
  if (!why.empty()) throw_error(StatusCode::kFailedPrecondition, why);
  return endpoint.register_buffer(exported, local);
}

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
  // No newline, no provider, no address, an odd number of hex digits.
  for (const char* malformed : {"gdr1 shm", "gdr1 \n00", "gdr1 shm\n", "gdr1 shm\n0"}) {
    EXPECT_EQ(GdrEndpoint::why_not({a.offer(), malformed}),
              "rank 1 has no GDR endpoint (a malformed offer)")
        << malformed;
  }
  try {
    a.connect(0, {a.offer(), GdrEndpoint::no_offer("not asked for")});
    FAIL() << "connected to a rank without an offer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(e.message(), "rank 1: no GDR offer");
  }
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
  // What every output holds before the ring runs.
  static constexpr float kUnwritten = -7.0f;
  Runtime runtime_;

  // Runs `collective` between ranks on `devices` (one thread each, as
  // ranks' own progress loops would), in slices of `slice_bytes`, and returns each
  // rank's output. `count` is GdrRingArgs::count; rank r's input element i
  // is input(r, i).
  std::vector<std::vector<float>> run_ring(GdrCollective collective,
                                           const std::vector<Device>& devices, uint64_t count,
                                           float (*input)(int, uint64_t), int root = 0,
                                           uint64_t slice_bytes = 4096) {
    const int n = static_cast<int>(devices.size());
    const uint64_t in_count = collective == GdrCollective::kReduceScatter ? count * n : count;
    const uint64_t out_count = collective == GdrCollective::kAllGather ? count * n : count;
    std::vector<std::unique_ptr<GdrEndpoint>> endpoints;
    std::vector<std::string> offers;
    for (int r = 0; r < n; ++r) {
      endpoints.push_back(std::make_unique<GdrEndpoint>(GetParam(), node()));
      offers.push_back(endpoints[r]->offer());
    }
    std::vector<Buffer> send, recv;
    send.reserve(n);  // BufferRefs point at the buffers' devices
    recv.reserve(n);
    std::vector<CallOffer> call(n);
    std::vector<GdrRingArgs> args(n);
    std::vector<std::unique_ptr<Stream>> streams;
    for (int r = 0; r < n; ++r) {
      endpoints[r]->connect(r, offers);
      std::vector<float> values(in_count);
      for (uint64_t i = 0; i < in_count; ++i) values[i] = input(r, i);
      send.emplace_back(devices[r], in_count * 4);
      recv.emplace_back(devices[r], out_count * 4);
      send[r].copy_from_host(values.data(), in_count * 4);
      const std::vector<float> unwritten(out_count, kUnwritten);
      recv[r].copy_from_host(unwritten.data(), out_count * 4);
      streams.push_back(std::make_unique<Stream>(devices[r]));
      GdrRingArgs& a = args[r];
      a.collective = collective;
      a.rank = r;
      a.world = n;
      a.seq = 5;
      a.dtype = DType::kF32;
      a.count = count;
      a.root = root;
      a.slice_bytes = slice_bytes;
      a.send = BufferRef(send[r]);
      a.recv = BufferRef(recv[r]);
      register_for_call(*endpoints[r], a.send, in_count * 4, &a.send_local);
      call[r].recv = register_for_call(*endpoints[r], a.recv, out_count * 4, &a.recv_local);
      if (collective == GdrCollective::kAllReduce)
        a.scratch = &endpoints[r]->scratch(devices[r], count * 4, &call[r].scratch);
      if (collective == GdrCollective::kReduceScatter || collective == GdrCollective::kReduce)
        a.scratch = &endpoints[r]->scratch(devices[r], 2 * in_count * 4, &call[r].scratch,
                                           &a.scratch_local);
      call[r].credit = endpoints[r]->credit_region();
      call[r].eligible = true;
      a.stream = streams[r].get();
    }
    std::vector<std::thread> ranks;
    std::vector<std::string> errors(n);
    for (int r = 0; r < n; ++r) {
      args[r].next = call[(r + 1) % n];
      args[r].prev = call[(r + n - 1) % n];
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
    EXPECT_EQ(errors, std::vector<std::string>(n));
    // Every write landed where a ring counted it: a notice left over would
    // fail the endpoint's next call as a stale one.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (std::chrono::steady_clock::now() < until) {
      for (int r = 0; r < n; ++r) {
        WriteNotice stray;
        endpoints[r]->fabric().progress();
        EXPECT_FALSE(endpoints[r]->fabric().next_notice(&stray))
            << "rank " << r << " got a write of no step: " << std::hex << stray.data;
      }
    }
    std::vector<std::vector<float>> got(n);
    for (int r = 0; r < n; ++r) {
      got[r].resize(out_count);
      recv[r].copy_to_host(got[r].data(), out_count * 4);
      endpoints[r]->release();
    }
    return got;
  }
};

float ramp(int rank, uint64_t i) { return static_cast<float>(i % 97) * (rank + 1) + 0.25f; }

// Rank 0 on cpu, rank 1 on sim: 2 ranks, an odd count (chunks of unequal
// size) in slices of 4 KiB; each ends with the bitwise-same sum.
// A call's buffers are exported once, and refused with the reason the
// rank prints when they cannot take the path.
TEST_P(GdrRingTest, ExportForCallSaysWhyABufferCannotBeRegistered) {
  GdrEndpoint endpoint(GetParam(), node());
  Device sim = runtime_.device("sim.faithful");
  Buffer buffer(sim, 256);
  GdrEndpoint::CallBuffer exported;
  EXPECT_EQ(endpoint.export_for_call(BufferRef(buffer, 64), 192, &exported), "");
  EXPECT_EQ(exported.offset, 64u);
  EXPECT_EQ(exported.bytes, 192u);
  EXPECT_NE(exported.memory.address, nullptr);
  EXPECT_EQ(endpoint.export_for_call(BufferRef(buffer, 64), 193, &exported),
            "193 bytes from offset 64 leave the buffer");
  float host[4];
  EXPECT_NE(endpoint.export_for_call(BufferRef(host), 16, &exported).find("a host pointer"),
            std::string::npos);
}

TEST_P(GdrRingTest, TwoRanksOnDifferentAdaptersEndWithTheSameSum) {
  const uint64_t count = 10001;
  const auto got = run_ring(GdrCollective::kAllReduce,
                            {runtime_.device("cpu"), runtime_.device("sim.faithful")}, count, ramp);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], got[1]) << "bitwise the same on both ranks";
  for (uint64_t i = 0; i < count; ++i)
    ASSERT_EQ(got[0][i], static_cast<float>(i % 97) * 3 + 0.5f) << "element " << i;
}

// Three ranks (cpu, sim, cpu): each block's partial sum passes through a
// rank's running sums before it lands as the owner's output; each rank
// ends with its own block of the sum, in the ring's order of additions.
TEST_P(GdrRingTest, ThreeRanksReduceScatterEachToItsOwnBlock) {
  const uint64_t count = 3001;  // per rank: slices of unequal size
  const auto got =
      run_ring(GdrCollective::kReduceScatter,
               {runtime_.device("cpu"), runtime_.device("sim.faithful"), runtime_.device("cpu")},
               count, ramp);
  ASSERT_EQ(got.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t at = r * count + i;
      // Block r starts at rank r + 1 and is added along the ring up to rank r.
      float sum = ramp((r + 1) % 3, at);
      sum = ramp((r + 2) % 3, at) + sum;
      sum = ramp(r, at) + sum;
      ASSERT_EQ(got[r][i], sum) << "rank " << r << " element " << i;
    }
  }
}

// Three ranks, root 1: the chain runs 1 -> 2 -> 0, rank 2 writing each
// slice on as it lands; every rank ends with the root's input.
TEST_P(GdrRingTest, ThreeRanksBroadcastFromTheMiddleRank) {
  const uint64_t count = 5003;
  const auto got = run_ring(
      GdrCollective::kBroadcast,
      {runtime_.device("sim.faithful"), runtime_.device("cpu"), runtime_.device("sim.faithful")},
      count, ramp, /*root=*/1);
  ASSERT_EQ(got.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    // The root's output is the communicator's copy: the ring leaves it alone.
    for (uint64_t i = 0; i < count; ++i)
      ASSERT_EQ(got[r][i], r == 1 ? kUnwritten : ramp(1, i)) << "rank " << r << " element " << i;
  }
}

// Three ranks, root 0: the chain runs 1 -> 2 -> 0, rank 2 adding its input
// to each slice (into its running sums) before writing it on, the root
// adding its own into the output.
TEST_P(GdrRingTest, ThreeRanksReduceToTheFirstRank) {
  const uint64_t count = 4099;
  const auto got = run_ring(
      GdrCollective::kReduce,
      {runtime_.device("cpu"), runtime_.device("sim.faithful"), runtime_.device("sim.faithful")},
      count, ramp, /*root=*/0);
  ASSERT_EQ(got.size(), 3u);
  for (uint64_t i = 0; i < count; ++i)
    ASSERT_EQ(got[0][i], ramp(0, i) + (ramp(2, i) + ramp(1, i))) << "element " << i;
}

// The ring takes 2 to 2^14 ranks (the step field of a notice) and at
// least one element, an all-reduce one a rank; anything else is refused
// before a write is posted.
TEST_P(GdrRingTest, ARingOfNoRanksTooManyOrTooFewElementsIsRefused) {
  GdrEndpoint endpoint(GetParam(), node());
  struct Shape {
    GdrCollective collective;
    int world;
    uint64_t count;
    bool takes;
  };
  for (const Shape& shape :
       {Shape{GdrCollective::kBroadcast, 1 << 14, 1, true},
        Shape{GdrCollective::kBroadcast, (1 << 14) + 1, 1, false},
        Shape{GdrCollective::kBroadcast, 1, 1, false},
        Shape{GdrCollective::kBroadcast, 2, 0, false}, Shape{GdrCollective::kAllReduce, 3, 3, true},
        Shape{GdrCollective::kAllReduce, 3, 2, false}}) {
    GdrRingArgs a;
    a.collective = shape.collective;
    a.world = shape.world;
    a.count = shape.count;
    const std::string what =
        std::to_string(shape.world) + " ranks, count " + std::to_string(shape.count);
    if (shape.takes) {
      EXPECT_NO_THROW({ GdrRing ring(endpoint, a); }) << what;
      continue;
    }
    try {
      GdrRing ring(endpoint, a);
      ADD_FAILURE() << what << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kInternal) << what;
    }
  }
}

// Full mantissas at magnitudes 2^-6 .. 2^6, either sign: float sums round
// differently in another order, so the sums below also check the order of
// the additions.
float wavy(int rank, uint64_t i) {
  const uint64_t h = (i * 2654435761u + static_cast<uint64_t>(rank) * 40503u) % 1000003u;
  const float magnitude =
      std::ldexp(1.0f + static_cast<float>(h % 8191) / 8191.0f, static_cast<int>(h % 13) - 6);
  return h % 2 ? -magnitude : magnitude;
}

// input(first, i) + ... added along the ring: each later rank adds its own
// input to what landed (in + partial), up to first - 1.
float ring_sum(float (*input)(int, uint64_t), int n, int first, uint64_t i) {
  float sum = input(first, i);
  for (int k = 1; k < n; ++k) sum = input((first + k) % n, i) + sum;
  return sum;
}

// Devices alternating cpu and sim.
std::vector<Device> mixed(Runtime& runtime, int n) {
  std::vector<Device> devices;
  for (int r = 0; r < n; ++r) devices.push_back(runtime.device(r % 2 ? "sim.faithful" : "cpu"));
  return devices;
}

// All-reduce among 2-4 ranks, counts that do not split evenly, down to one
// element a chunk (the fewest a ring takes) and slices of one element:
// chunk c (the first count % n chunks one element longer) is added along
// the ring from rank c; every rank ends with the same bits.
TEST_P(GdrRingTest, AllReduceAddsEachChunkAlongTheRingFromItsFirstRank) {
  struct Shape {
    int n;
    uint64_t count, slice_bytes;
  };
  for (const Shape& shape : {Shape{3, 10001, 4096}, Shape{4, 4097, 4096}, Shape{3, 3, 4},
                             Shape{2, 11, 4}, Shape{2, 5000, 4}}) {
    const int n = shape.n;
    const uint64_t count = shape.count;
    SCOPED_TRACE(std::to_string(n) + " ranks, count " + std::to_string(count));
    const auto got =
        run_ring(GdrCollective::kAllReduce, mixed(runtime_, n), count, wavy, 0, shape.slice_bytes);
    ASSERT_EQ(got.size(), static_cast<size_t>(n));
    const uint64_t base = count / n, longer = count % n;
    for (int r = 1; r < n; ++r) EXPECT_EQ(got[r], got[0]) << "rank " << r;
    int chunk = 0;
    for (uint64_t i = 0; i < count; ++i) {
      while (i >= (chunk + 1) * base + std::min<uint64_t>(chunk + 1, longer)) ++chunk;
      ASSERT_EQ(got[0][i], ring_sum(wavy, n, chunk, i)) << "element " << i;
    }
  }
}

// Reduce-scatter among 2 and 4 ranks: block r is added along the ring from
// rank r + 1 up to its owner r.
TEST_P(GdrRingTest, ReduceScatterAddsEachBlockFromTheRankAfterItsOwner) {
  for (int n : {2, 4}) {
    const uint64_t count = 1027;
    const auto got = run_ring(GdrCollective::kReduceScatter, mixed(runtime_, n), count, wavy);
    ASSERT_EQ(got.size(), static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      for (uint64_t i = 0; i < count; ++i) {
        ASSERT_EQ(got[r][i], ring_sum(wavy, n, (r + 1) % n, r * count + i))
            << n << " ranks, rank " << r << " element " << i;
      }
    }
  }
}

// All-gather among 2-4 ranks: block r of every rank's output is rank r's
// input, in slices of unequal size; a rank's own block is the
// communicator's copy, which the ring leaves alone.
TEST_P(GdrRingTest, AllGatherPutsEveryRanksInputInItsBlock) {
  for (int n : {2, 3, 4}) {
    const uint64_t count = 2049;
    const auto got = run_ring(GdrCollective::kAllGather, mixed(runtime_, n), count, wavy);
    ASSERT_EQ(got.size(), static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      for (int block = 0; block < n; ++block) {
        for (uint64_t i = 0; i < count; ++i) {
          ASSERT_EQ(got[r][block * count + i], block == r ? kUnwritten : wavy(block, i))
              << n << " ranks, rank " << r << " block " << block << " element " << i;
        }
      }
    }
  }
}

// Broadcast from the first and the last rank of four: every other rank
// ends with the root's input.
TEST_P(GdrRingTest, FourRanksBroadcastFromTheFirstAndTheLastRank) {
  for (int root : {0, 3}) {
    const uint64_t count = 3001;
    const auto got = run_ring(GdrCollective::kBroadcast, mixed(runtime_, 4), count, wavy, root);
    ASSERT_EQ(got.size(), 4u);
    for (int r = 0; r < 4; ++r) {
      for (uint64_t i = 0; i < count; ++i) {
        ASSERT_EQ(got[r][i], r == root ? kUnwritten : wavy(root, i))
            << "root " << root << " rank " << r << " element " << i;
      }
    }
  }
}

// Reduce to every root of three and of two ranks: the chain adds from the
// rank after the root along the ring up to the root, in one-element slices
// as well.
TEST_P(GdrRingTest, ReduceToEveryRootAddsAlongTheRingFromTheRankAfterIt) {
  for (int n : {2, 3}) {
    for (int root = 0; root < n; ++root) {
      const uint64_t count = 9;
      const auto got =
          run_ring(GdrCollective::kReduce, mixed(runtime_, n), count, wavy, root, root ? 4 : 12);
      ASSERT_EQ(got.size(), static_cast<size_t>(n));
      for (uint64_t i = 0; i < count; ++i) {
        ASSERT_EQ(got[root][i], ring_sum(wavy, n, (root + 1) % n, i))
            << n << " ranks, root " << root << " element " << i;
      }
    }
  }
}

// A remote write whose notice belongs to no step of the call (another
// collective's, or forged) fails the call instead of being counted: a
// notice of another call, of no kind, of a slice or a step past the call's
// (rank 0 of three ranks: 16 elements, one slice a chunk, two steps a
// phase; a chain's one step), or a credit of any step or slice but the
// first.
TEST_P(GdrRingTest, ANoticeOfNoStepIsDataCorruption) {
  const uint64_t kScatter = uint64_t{1} << 30, kGather = uint64_t{2} << 30,
                 kCredit = uint64_t{3} << 30, kStep = 1 << 16, kSlice = 1 << 8;
  const std::pair<GdrCollective, uint64_t> cases[] = {
      {GdrCollective::kAllReduce, kScatter | 8},
      {GdrCollective::kAllReduce, 9},
      {GdrCollective::kAllReduce, kScatter | kSlice | 9},
      {GdrCollective::kAllReduce, kScatter | 2 * kStep | 9},
      {GdrCollective::kAllReduce, kGather | 2 * kStep | 9},
      {GdrCollective::kAllReduce, kCredit | kStep | 9},
      {GdrCollective::kAllReduce, kCredit | kSlice | 9},
      {GdrCollective::kBroadcast, kGather | kStep | 9}};
  for (const auto& [collective, notice] : cases) {
    SCOPED_TRACE(fmt::format("notice {:#x}", notice));
    const Device device = runtime_.device("sim.faithful");
    GdrEndpoint target(GetParam(), node()), writer(GetParam(), node());
    target.connect(0, {target.offer(), writer.offer()});
    writer.connect(1, {target.offer(), writer.offer()});
    Buffer send(device, 64), recv(device, 64);
    Stream stream(device);
    GdrRingArgs a;
    a.collective = collective;
    a.world = 3;
    a.seq = 9;
    a.count = 16;
    a.send = BufferRef(send);
    a.recv = BufferRef(recv);
    CallOffer mine;
    register_for_call(target, a.send, 64, &a.send_local);
    mine.recv = register_for_call(target, a.recv, 64, &a.recv_local);
    a.scratch = &target.scratch(device, 64, &mine.scratch);
    mine.credit = target.credit_region();
    a.stream = &stream;
    // The writer's side needs no ring: it writes 8 bytes with the notice.
    std::vector<uint8_t> source(8, 1);
    writer.fabric().register_memory(source.data(), source.size());
    std::thread forger([&] {
      writer.fabric().write(writer.peer(0), source.data(), 8, mine.scratch, 0, notice, 20);
    });
    // Rank 0's ring never gets its own writes through (there is no rank 1
    // ring): only the forged notice arrives.
    a.next = a.prev = mine;
    GdrRing ring(target, a);
    bool moved = false;
    try {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (std::chrono::steady_clock::now() < deadline) ring.progress(&moved);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kDataCorruption);
      EXPECT_NE(
          e.message().find(fmt::format("GDR ring #9: a remote write announced {:#x}", notice)),
          std::string::npos)
          << e.message();
    }
    forger.join();
    target.release();
  }
}

// A notice of the last step that comes before one of an earlier step
// (another provider's order, or forged) does not end the ring: rank 0 of
// three all-gathering 16 elements (one slice, two steps) still owes its
// next the block the earlier step would have brought, so it is not done.
TEST_P(GdrRingTest, AllGatherIsNotDoneBeforeItPostedEveryStep) {
  const Device device = runtime_.device("sim.faithful");
  GdrEndpoint target(GetParam(), node()), next(GetParam(), node()), prev(GetParam(), node());
  const std::vector<std::string> offers = {target.offer(), next.offer(), prev.offer()};
  target.connect(0, offers);
  next.connect(1, offers);
  prev.connect(2, offers);
  Buffer send(device, 64), recv(device, 3 * 64);
  Stream stream(device);
  GdrRingArgs a;
  a.collective = GdrCollective::kAllGather;
  a.world = 3;
  a.seq = 9;
  a.count = 16;
  a.send = BufferRef(send);
  a.recv = BufferRef(recv);
  register_for_call(target, a.send, 64, &a.send_local);
  a.prev.recv = register_for_call(target, a.recv, 3 * 64, &a.recv_local);
  a.stream = &stream;
  // Next's output takes rank 0's step-0 write; prev writes only step 1.
  std::vector<uint8_t> next_output(3 * 64), source(64, 1);
  a.next.recv = next.fabric().register_memory(next_output.data(), next_output.size());
  prev.fabric().register_memory(source.data(), source.size());
  std::atomic<bool> stop = false;
  std::thread others([&] {
    prev.fabric().write(prev.peer(0), source.data(), 64, a.prev.recv, 2 * 64,
                        (uint64_t{2} << 30) | (1 << 16) | 9, 20);
    WriteNotice notice;
    while (!stop) {
      next.fabric().progress();
      next.fabric().next_notice(&notice);
    }
  });
  bool done = false;
  {
    GdrRing ring(target, a);
    bool moved = false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!done && std::chrono::steady_clock::now() < until) done = ring.progress(&moved);
  }
  stop = true;
  others.join();
  EXPECT_FALSE(done) << "done without its step-1 write";
  target.release();
}

INSTANTIATE_TEST_SUITE_P(Providers, GdrRingTest, ::testing::Values("tcp;ofi_rxm", "shm"),
                         [](const auto& info) {
                           return std::string(info.param) == "shm" ? "shm" : "tcp_rxm";
                         });

}  // namespace
}  // namespace polychip::comm
