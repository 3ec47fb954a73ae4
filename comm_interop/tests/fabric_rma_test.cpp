// One-sided writes over the libfabric providers that run on this machine
// (tcp;ofi_rxm over loopback, shm): two endpoints, each progressed by its
// own thread, as two ranks' would be.
#include "transport/rdma/fabric_rma.hpp"
#include "transport/rdma/rma_ring.hpp"
#include "transport/rdma/shm_provider_regions.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "polychip/error.hpp"
#include "polychip/memory.hpp"
#include "polychip/runtime.hpp"

extern "C" const polychip_adapter_api* polychip_sim_adapter_get_api(void);

namespace polychip::comm {
namespace {

class FabricRmaTest : public ::testing::TestWithParam<const char*> {
 protected:
  // The loopback address keeps tcp;ofi_rxm off the machine's real interfaces.
  std::string node() const { return std::string(GetParam()) == "shm" ? "" : "127.0.0.1"; }
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + seed);
  return v;
}

TEST_P(FabricRmaTest, WritesLandWhereTheyAreAimedAndTheTargetIsTold) {
  FabricRma writer(GetParam(), node()), target(GetParam(), node());
  EXPECT_EQ(writer.provider(), GetParam());
  const uint64_t peer = writer.add_peer(target.address());
  const size_t region_bytes = (1 << 20) + 4096;
  std::vector<uint8_t> landing(region_bytes, 0xEE);
  const RemoteRegion region = target.register_memory(landing.data(), landing.size());
  EXPECT_EQ(target.register_memory(landing.data(), landing.size()).key, region.key)
      << "registrations are cached";

  // A whole MiB at the start, then an odd size at an odd offset.
  std::vector<uint8_t> big = pattern(1 << 20, 1), odd = pattern(4097, 7);
  std::vector<uint64_t> seen;
  std::thread progress([&] {
    for (int i = 0; i < 2; ++i) seen.push_back(target.wait_write(20).data);
  });
  writer.write(peer, big.data(), big.size(), region, 0, 0xB16, 20);
  writer.write(peer, odd.data(), odd.size(), region, (1 << 20) - 3, 0x0DD, 20);
  progress.join();
  EXPECT_EQ(seen, (std::vector<uint64_t>{0xB16, 0x0DD}));
  EXPECT_TRUE(std::equal(big.begin(), big.end() - 3, landing.begin()));
  EXPECT_TRUE(std::equal(odd.begin(), odd.end(), landing.begin() + (1 << 20) - 3));
  // Nothing past the odd write's last byte changed.
  const size_t end = (1 << 20) - 3 + odd.size();
  for (size_t i = end; i < region_bytes; ++i) ASSERT_EQ(landing[i], 0xEE) << "byte " << i;
}

// A part of a registered region is served by its registration (the same
// key), aimed at that part; a range reaching past it is registered anew.
TEST_P(FabricRmaTest, APartOfARegisteredRegionIsServedByItAndWritesLandInThatPart) {
  FabricRma writer(GetParam(), node()), target(GetParam(), node());
  std::vector<uint8_t> landing(8192, 0xEE);
  const RemoteRegion whole = target.register_memory(landing.data(), landing.size());
  const RemoteRegion part = target.register_memory(landing.data() + 100, 50);
  EXPECT_EQ(part.key, whole.key);
  EXPECT_EQ(part.size, 50u);
  EXPECT_EQ(target.register_memory(landing.data(), 50).key, whole.key) << "the head";
  EXPECT_EQ(target.register_memory(landing.data() + 4096, 4096).key, whole.key) << "the tail";
  std::vector<uint8_t> longer(8193);
  const uint64_t short_key = target.register_memory(longer.data(), 8192).key;
  EXPECT_NE(target.register_memory(longer.data(), 8193).key, short_key) << "one byte past it";

  const std::vector<uint8_t> data = pattern(50, 4);
  uint64_t seen = 0;
  std::thread progress([&] { seen = target.wait_write(20).data; });
  writer.write(writer.add_peer(target.address()), data.data(), data.size(), part, 0, 3, 20);
  progress.join();
  EXPECT_EQ(seen, 3u);
  std::vector<uint8_t> expected(8192, 0xEE);
  std::copy(data.begin(), data.end(), expected.begin() + 100);
  EXPECT_EQ(landing, expected);
}

// The message of the INVALID_ARGUMENT error `call` throws ("" if none).
template <typename Call>
std::string invalid_argument(Call call) {
  try {
    call();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    return e.message();
  }
  return "";
}

TEST_P(FabricRmaTest, AnEmptyOrNullRegionIsNeitherRegisteredNorLent) {
  FabricRma endpoint(GetParam(), node());
  std::vector<uint8_t> memory(64);
  const std::string registering = "register_memory: an empty or null region";
  EXPECT_EQ(invalid_argument([&] { endpoint.register_memory(nullptr, 64); }), registering);
  EXPECT_EQ(invalid_argument([&] { endpoint.register_memory(memory.data(), 0); }), registering);
  const std::string lending = "lend_memory: an empty or null region";
  EXPECT_EQ(invalid_argument([&] { endpoint.lend_memory(nullptr, 64); }), lending);
  EXPECT_EQ(invalid_argument([&] { endpoint.lend_memory(memory.data(), 0); }), lending);
}

// GDR's building block: a device allocation, exported by its adapter
// (adapter ABI 1.1; sim exports its memory as system memory), registered
// and written one-sidedly straight from another device allocation: no copy
// through host memory on either side.
TEST_P(FabricRmaTest, ADeviceAllocationIsWrittenStraightFromAnother) {
  RuntimeOptions options;
  options.builtin_adapters = {&polychip_sim_adapter_get_api};
  Runtime runtime(options);
  const Device device = runtime.device("sim.faithful");
  const std::vector<uint8_t> data = pattern((64 << 10) + 5, 3);
  Buffer source(device, data.size()), landing(device, data.size());
  source.copy_from_host(data.data(), data.size());
  const NetworkMemory from = source.network_export(), to = landing.network_export();

  FabricRma writer(GetParam(), node()), target(GetParam(), node());
  const uint64_t peer = writer.add_peer(target.address());
  const RemoteRegion region =
      target.register_memory(to.address, to.size, to.interface, to.device_ordinal);
  writer.register_memory(from.address, from.size, from.interface, from.device_ordinal);
  uint64_t seen = 0;
  std::thread progress([&] { seen = target.wait_write(20).data; });
  writer.write(peer, from.address, data.size(), region, 0, 0x6D2, 20);
  progress.join();
  EXPECT_EQ(seen, 0x6D2u);
  std::vector<uint8_t> landed(data.size());
  landing.copy_to_host(landed.data(), landed.size());
  EXPECT_EQ(landed, data);
  target.deregister_memory(to.address, to.size);
  writer.deregister_memory(from.address, from.size);
}

TEST_P(FabricRmaTest, DeviceMemoryNeedsAnEndpointWithHmem) {
  FabricRma endpoint(GetParam(), node());
  std::vector<uint8_t> memory(4096);
  EXPECT_TRUE(endpoint.can_register(POLYCHIP_MEMORY_INTERFACE_SYSTEM));
  for (polychip_memory_interface where :
       {POLYCHIP_MEMORY_INTERFACE_CUDA, POLYCHIP_MEMORY_INTERFACE_ROCR,
        POLYCHIP_MEMORY_INTERFACE_ZE}) {
    ASSERT_FALSE(endpoint.can_register(where)) << "opened without FI_HMEM";
    try {
      endpoint.register_memory(memory.data(), memory.size(), where, 0);
      FAIL() << memory_interface_name(where);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kUnsupported);
      EXPECT_EQ(e.message().find(std::string(GetParam()) +
                                 " was opened without FI_HMEM: it cannot "
                                 "register " +
                                 memory_interface_name(where) + " device memory"),
                0u)
          << e.message();
    }
  }
  EXPECT_FALSE(endpoint.can_register(POLYCHIP_MEMORY_INTERFACE_DMABUF));
  try {
    endpoint.register_memory(memory.data(), memory.size(), POLYCHIP_MEMORY_INTERFACE_DMABUF, 0);
    FAIL() << "dma-buf";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnsupported);
    EXPECT_NE(e.message().find("a dma-buf cannot be registered"), std::string::npos);
  }
}

// Asked for device memory, shm opens with FI_HMEM (it copies device memory
// through the interface's own calls); tcp;ofi_rxm has no FI_HMEM and opens
// for system memory only, saying so through can_register.
TEST_P(FabricRmaTest, AnEndpointForDeviceMemoryHasHmemWhereTheProviderDoes) {
  FabricRma endpoint(GetParam(), node(), /*device_memory=*/true);
  EXPECT_EQ(endpoint.provider(), GetParam());
  EXPECT_TRUE(endpoint.can_register(POLYCHIP_MEMORY_INTERFACE_SYSTEM));
  const bool hmem = std::string(GetParam()) == "shm";
  EXPECT_EQ(endpoint.can_register(POLYCHIP_MEMORY_INTERFACE_CUDA), hmem);
  EXPECT_EQ(endpoint.can_register(POLYCHIP_MEMORY_INTERFACE_ZE), hmem);
  EXPECT_FALSE(endpoint.can_register(POLYCHIP_MEMORY_INTERFACE_DMABUF));
  // And it still writes system memory, as the H2D-RDMA lanes' endpoints do.
  FabricRma target(GetParam(), node(), true);
  std::vector<uint8_t> landing(4096, 0), data = pattern(4096, 9);
  const RemoteRegion region = target.register_memory(landing.data(), landing.size());
  uint64_t seen = 0;
  std::thread progress([&] { seen = target.wait_write(20).data; });
  endpoint.write(endpoint.add_peer(target.address()), data.data(), data.size(), region, 0, 7, 20);
  progress.join();
  EXPECT_EQ(seen, 7u);
  EXPECT_EQ(landing, data);
}

TEST_P(FabricRmaTest, AWriteOutsideThePeersRegionIsRefusedBeforeItIsSent) {
  FabricRma writer(GetParam(), node()), target(GetParam(), node());
  const uint64_t peer = writer.add_peer(target.address());
  std::vector<uint8_t> landing(4096), source(4096);
  const RemoteRegion region = target.register_memory(landing.data(), landing.size());
  try {
    writer.write(peer, source.data(), 4096, region, 1, 0, 5);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(e.message(),
              "fabric write of 4096 bytes at offset 1 leaves the peer's region of 4096 bytes");
  }
}

// A key the target never handed out: neither provider here fails the
// writer's completion (tcp;ofi_rxm and shm complete the write locally), but
// nothing lands and the target is told nothing — which is why the RDMA path
// counts a transfer done only on the target's notice, never on the writer's
// local completion.
// Writes 64 bytes into `region` of `target` and expects nothing to land in
// `landing` (4096 bytes of 0xEE) and no notice at the target within 1 s.
void expect_write_lands_nowhere(FabricRma& writer, uint64_t peer, FabricRma& target,
                                const RemoteRegion& region, const std::vector<uint8_t>& landing) {
  std::vector<uint8_t> source(64, 1);
  std::string target_error;
  std::thread progress([&] {
    try {
      target.wait_write(1);
    } catch (const Error& e) {
      target_error = e.message();
    }
  });
  try {
    writer.write(peer, source.data(), source.size(), region, 0, 0, 1);
  } catch (const Error&) {
    // A provider that does report it is fine too.
  }
  progress.join();
  EXPECT_EQ(landing, std::vector<uint8_t>(4096, 0xEE));
  EXPECT_EQ(target_error, target.provider() + ": no remote write arrived");
}

TEST_P(FabricRmaTest, AWriteWithAForeignKeyNeverLandsNorNotifies) {
  FabricRma writer(GetParam(), node()), target(GetParam(), node());
  const uint64_t peer = writer.add_peer(target.address());
  std::vector<uint8_t> landing(4096, 0xEE);
  RemoteRegion region = target.register_memory(landing.data(), landing.size());
  region.key += 1000;
  expect_write_lands_nowhere(writer, peer, target, region, landing);
}

// A deregistered region takes no more writes: the peer's late write with
// the old key lands nowhere, and registering the memory again is no cache hit.
TEST_P(FabricRmaTest, ADeregisteredRegionTakesNoMoreWrites) {
  FabricRma writer(GetParam(), node()), target(GetParam(), node());
  const uint64_t peer = writer.add_peer(target.address());
  std::vector<uint8_t> landing(4096, 0xEE);
  const RemoteRegion region = target.register_memory(landing.data(), landing.size());
  target.deregister_memory(landing.data(), landing.size());
  target.deregister_memory(landing.data(), landing.size());  // unknown now: nothing happens
  expect_write_lands_nowhere(writer, peer, target, region, landing);
}

TEST_P(FabricRmaTest, AnAddressThatIsNoneOfThisProvidersIsRefused) {
  FabricRma endpoint(GetParam(), node());
  const std::string why = invalid_argument([&] { endpoint.add_peer({1, 2, 3}); });
  EXPECT_NE(why.find("a peer address of 3 bytes is not"), std::string::npos) << why;
  if (std::string(GetParam()) == "shm") {
    // Only the shape is checked: one character and its NUL is a name (shm's
    // address vector takes any), a lone NUL is none.
    EXPECT_NO_THROW(endpoint.add_peer({'x', 0}));
    EXPECT_EQ(invalid_argument([&] { endpoint.add_peer({0}); }),
              "shm: a peer address of 1 bytes is not a NUL-terminated name, as this provider's "
              "are");
  } else {
    // The right size, but no address (family 0): the address vector says no.
    const std::vector<uint8_t> zeros(endpoint.address().size(), 0);
    EXPECT_EQ(invalid_argument([&] { endpoint.add_peer(zeros); }),
              "tcp;ofi_rxm: the address vector refused a peer address");
  }
}

// 64 bytes written from `writer` land in a region of `target`.
void expect_a_write_lands(FabricRma& writer, FabricRma& target, uint8_t seed) {
  std::vector<uint8_t> landing(64, 0xEE), data = pattern(64, seed);
  const RemoteRegion region = target.register_memory(landing.data(), landing.size());
  const uint64_t peer = writer.add_peer(target.address());
  std::thread progress([&] { target.wait_write(20); });
  writer.write(peer, data.data(), data.size(), region, 0, 1, 20);
  progress.join();
  EXPECT_EQ(landing, data);
}

// shm names its endpoints "fi_shm://<pid>:<uid>:<endpoint>": ranks whose
// pids (or endpoint counts) differ in digits have names of different
// lengths, and must still reach each other. The endpoint count is the
// process's (earlier tests and --gtest_repeat runs add to it), so endpoints
// are opened until the count gains a digit: at most 9 in 10 of them.
TEST_P(FabricRmaTest, PeersWhoseNamesDifferInLengthReachEachOther) {
  if (std::string(GetParam()) != "shm") GTEST_SKIP() << "fixed-size addresses";
  auto writer = std::make_unique<FabricRma>(GetParam(), node());
  std::unique_ptr<FabricRma> target;
  for (int i = 0; i < 10000 && !target; ++i) {
    auto next = std::make_unique<FabricRma>(GetParam(), node());
    if (next->address().size() != writer->address().size()) target = std::move(next);
  }
  ASSERT_TRUE(target) << "no endpoint name of another length in 10000";
  expect_a_write_lands(*writer, *target, 5);
  EXPECT_NO_THROW(target->add_peer(writer->address()));
}

// A rank killed by SIGKILL leaves its shm region in /dev/shm, named after
// its pid and endpoint count; a later process with the same pid finds the
// names taken. Planted here: the next `n` names this process would take
// after `endpoint`'s, into `stale`.
void plant_names_after(const FabricRma& endpoint, int n, std::vector<std::string>* stale) {
  const std::vector<uint8_t> own = endpoint.address();
  const std::string name(own.begin(), std::find(own.begin(), own.end(), uint8_t{0}));
  const std::string uid = std::to_string(::getuid());
  const std::string prefix = "fi_shm://" + std::to_string(::getpid()) + ":" + uid + ":";
  ASSERT_EQ(name.rfind(prefix, 0), 0u) << name << ": not the naming this test plants for";
  const int count = std::stoi(name.substr(prefix.size()));
  for (int next = count + 1; next <= count + n; ++next) {
    stale->push_back("/dev/shm/" + std::to_string(::getpid()) + ":" + uid + ":" +
                     std::to_string(next));
    std::ofstream(stale->back()) << "left by a killed rank";
  }
}

TEST_P(FabricRmaTest, NamesLeftByAKilledProcessWithThisPidAreSteppedOver) {
  if (std::string(GetParam()) != "shm") GTEST_SKIP() << "no named regions";
  auto writer = std::make_unique<FabricRma>(GetParam(), node());
  std::vector<std::string> stale;
  ASSERT_NO_FATAL_FAILURE(plant_names_after(*writer, 3, &stale));
  std::unique_ptr<FabricRma> target;
  EXPECT_NO_THROW(target = std::make_unique<FabricRma>(GetParam(), node()));
  for (const std::string& path : stale) std::remove(path.c_str());
  ASSERT_TRUE(target);
  expect_a_write_lands(*writer, *target, 9);
}

// The walk over taken names ends: 16 of them in a row are an error.
TEST_P(FabricRmaTest, AnEndpointGivesUpAfterSixteenTakenNames) {
  if (std::string(GetParam()) != "shm") GTEST_SKIP() << "no named regions";
  FabricRma writer(GetParam(), node());
  std::vector<std::string> stale;
  ASSERT_NO_FATAL_FAILURE(plant_names_after(writer, 16, &stale));
  try {
    FabricRma target(GetParam(), node());
    ADD_FAILURE() << "opened past 16 taken names as " << target.address().data();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnavailable);
    EXPECT_EQ(e.message().rfind("shm: fi_enable: ", 0), 0u) << e.message();
  }
  for (const std::string& path : stale) std::remove(path.c_str());
}

// Only this user's regions of that very pid go, whatever else /dev/shm holds.
TEST(ShmProviderRegions, OnlyTheNamesOfThatProcessAreRemoved) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("regions." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string uid = std::to_string(::getuid());
  const std::string other_uid = std::to_string(::getuid() + 1);
  const std::set<std::string> removed = {"4242:" + uid + ":0", "4242:" + uid + ":15"};
  const std::set<std::string> kept = {"42424:" + uid + ":0",      "424:" + uid + ":0",
                                      "4242:" + other_uid + ":0", "4242:" + uid + ":",
                                      "4242:" + uid + ":0.x",     "x4242:" + uid + ":0"};
  for (const auto& set : {removed, kept}) {
    for (const std::string& name : set) std::ofstream(dir / name) << "region";
  }
  EXPECT_EQ(remove_shm_provider_regions(4242, dir.string()), 2);
  for (const std::string& name : removed) EXPECT_FALSE(std::filesystem::exists(dir / name)) << name;
  for (const std::string& name : kept) EXPECT_TRUE(std::filesystem::exists(dir / name)) << name;
  std::filesystem::remove_all(dir);
  EXPECT_EQ(remove_shm_provider_regions(4242, dir.string()), 0);  // no such directory
}

// Two ranks' RDMA lanes in one process (rank 0 sends, rank 1 receives),
// progressed in turn as the transport's loop would.
struct LanePair {
  RmaEndpoint sender_side, receiver_side;
  std::unique_ptr<RmaRing> tx, rx;
  LanePair(const std::string& provider, const std::string& node, uint64_t capacity)
      : sender_side(std::make_unique<FabricRma>(provider, node), 0, 2),
        receiver_side(std::make_unique<FabricRma>(provider, node), 1, 2),
        tx(RmaRing::sender(sender_side, capacity)),
        rx(RmaRing::receiver(receiver_side, capacity)) {
    tx->connect(sender_side.fabric().add_peer(receiver_side.fabric().address()), rx->region());
    rx->connect(receiver_side.fabric().add_peer(sender_side.fabric().address()), tx->region());
    sender_side.attach(1, nullptr, tx.get());
    receiver_side.attach(0, rx.get(), nullptr);
  }

  // A raw write of `bytes` into the receiver's ring at `offset` (or, with
  // `to_sender`, into the sender's credit box), with a notice the test chose
  // (not the lane's own), posted once the provider takes it (both sides
  // progress: the target accepts the connection).
  void post_raw(const std::vector<uint8_t>& bytes, uint64_t offset, uint64_t notice,
                WriteCompletion* completion, bool to_sender = false) {
    FabricRma& writer = (to_sender ? receiver_side : sender_side).fabric();
    FabricRma& target = (to_sender ? sender_side : receiver_side).fabric();
    std::optional<uint64_t>& peer = raw_peer[to_sender];
    if (!peer) peer = writer.add_peer(target.address());
    while (!writer.post_write(*peer, bytes.data(), bytes.size(), (to_sender ? tx : rx)->region(),
                              offset, notice, completion)) {
      writer.progress();
      target.progress();
    }
  }

  // Drives the receiving side (or, `at_sender`, the sending side) until it
  // refuses what it was sent: a DATA_CORRUPTION error whose message holds
  // `reason`.
  void expect_refused(const std::string& reason, const std::string& believed,
                      bool at_sender = false) {
    try {
      for (int i = 0; i < 1000000; ++i) {
        (at_sender ? receiver_side : sender_side).fabric().progress();
        (at_sender ? tx : rx)->progress();
      }
      FAIL() << believed << " was believed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kDataCorruption);
      EXPECT_NE(e.message().find(reason), std::string::npos) << e.message();
    }
  }

  // Progresses both sides until `done()` or a million rounds.
  template <typename Done>
  void progress_until(Done done) {
    for (int i = 0; i < 1000000 && !done(); ++i) {
      tx->progress();
      rx->progress();
    }
  }
  // Index: to_sender. The target in the writer's address vector.
  std::optional<uint64_t> raw_peer[2];
};

TEST_P(FabricRmaTest, LaneBytesCrossTheWrapInOrderAndCreditsFreeTheRing) {
  LanePair lane(GetParam(), node(), 4096);
  std::mt19937 rng(5);
  std::vector<uint8_t> sent, got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  // Writes and reads of awkward sizes until the ring wrapped many times.
  while (sent.size() < 48 * 4096 && std::chrono::steady_clock::now() < until) {
    std::vector<uint8_t> piece(1 + rng() % 3000);
    for (auto& b : piece) b = static_cast<uint8_t>(rng());
    lane.tx->progress();
    const uint64_t n = lane.tx->write(piece.data(), piece.size());
    sent.insert(sent.end(), piece.begin(), piece.begin() + static_cast<long>(n));
    std::vector<uint8_t> buf(1 + rng() % 3000);
    lane.rx->progress();
    const uint64_t r = lane.rx->read(buf.data(), buf.size());
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<long>(r));
  }
  while (got.size() < sent.size() && std::chrono::steady_clock::now() < until) {
    lane.tx->progress();
    lane.rx->progress();
    std::vector<uint8_t> buf(4096);
    const uint64_t r = lane.rx->read(buf.data(), buf.size());
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<long>(r));
  }
  EXPECT_GE(sent.size(), 48u * 4096) << "credits stopped coming back";
  EXPECT_EQ(got, sent);
  while (!(lane.tx->drained() && lane.rx->drained()) && std::chrono::steady_clock::now() < until) {
    lane.tx->progress();
    lane.rx->progress();
  }
  EXPECT_TRUE(lane.tx->drained() && lane.rx->drained());
}

// Large payloads are lent, not copied: the ring writes from the caller's
// memory, and the caller may change it only once lent_in_use() lets go.
// Each lent byte is scribbled over the moment the ring lets go of it; the
// receiver must still get every byte as it was when lent (shm's target
// reads the source only when it progresses, so a loan ended early shows).
TEST_P(FabricRmaTest, LentBytesArriveAsLentAndTheLoanEndsWithTheWrites) {
  constexpr uint64_t kCapacity = 1 << 20;
  LanePair lane(GetParam(), node(), kCapacity);
  std::mt19937 rng(9);
  std::vector<uint8_t> source(3 * kCapacity + 5);
  for (auto& b : source) b = static_cast<uint8_t>(rng());
  const std::vector<uint8_t> original = source;
  struct Loan {
    uint64_t stream_begin, source_begin, bytes;
  };
  std::vector<Loan> loans;
  std::vector<uint8_t> expected, got;
  uint64_t taken = 0, lent = 0, scribbled_to = 0;  // scribbled: a stream position
  bool seen_in_use = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto scribble_let_go = [&] {
    const uint64_t let_go = taken - lane.tx->lent_in_use();
    for (const Loan& loan : loans) {
      const uint64_t from = std::max(scribbled_to, loan.stream_begin);
      const uint64_t to = std::min(let_go, loan.stream_begin + loan.bytes);
      if (from < to)
        std::memset(source.data() + loan.source_begin + (from - loan.stream_begin), 0xEE,
                    to - from);
    }
    scribbled_to = std::max(scribbled_to, let_go);
  };
  while ((lent < source.size() || got.size() < expected.size()) &&
         std::chrono::steady_clock::now() < until) {
    if (lent < source.size()) {
      // A small frame header, copied, then as much of the payload as fits.
      const uint8_t header[16] = {uint8_t(lent), 1, 2, 3};
      const uint64_t h = lane.tx->write(header, sizeof header);
      expected.insert(expected.end(), header, header + h);
      taken += h;
      if (h == sizeof header) {
        const uint64_t n = lane.tx->lend(source.data() + lent, source.size() - lent);
        if (n >= kRmaLendMinBytes) {
          loans.push_back({taken, lent, n});
          seen_in_use = seen_in_use || lane.tx->lent_in_use() >= n;
        }
        expected.insert(expected.end(), original.begin() + static_cast<long>(lent),
                        original.begin() + static_cast<long>(lent + n));
        taken += n;
        lent += n;
      }
    }
    scribble_let_go();
    lane.rx->progress();
    lane.tx->progress();
    scribble_let_go();
    std::vector<uint8_t> buf(200000);
    const uint64_t r = lane.rx->read(buf.data(), buf.size());
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<long>(r));
  }
  EXPECT_TRUE(seen_in_use) << "no payload was lent (all copied)";
  EXPECT_GE(loans.size(), 3u);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "a lent byte changed before the ring let go of it";
  while (!(lane.tx->drained() && lane.rx->drained()) && std::chrono::steady_clock::now() < until) {
    lane.tx->progress();
    lane.rx->progress();
  }
  EXPECT_TRUE(lane.tx->drained() && lane.rx->drained());
  EXPECT_EQ(lane.tx->lent_in_use(), 0u);
}

// A peer whose counts claim more than the ring's free space, a rank with
// no lane here, or writes landing out of order are refused, not believed.
TEST_P(FabricRmaTest, LaneRefusesNoticesItCannotBelieve) {
  LanePair lane(GetParam(), node(), 4096);
  const std::vector<uint8_t> source(16, 1);
  WriteCompletion first, second;
  lane.post_raw(source, 0, encode_rma_notice({0, RmaNoticeKind::kData, 4097}), &first);
  lane.expect_refused("past the ring's free space", "an overfilling notice");
  lane.post_raw(source, 0, encode_rma_notice({1, RmaNoticeKind::kData, 8}), &second);
  lane.expect_refused("rank 1, which has no lane", "a notice from a rank without a lane");
  WriteCompletion third;  // a rank past the job's last
  lane.post_raw(source, 0, encode_rma_notice({2, RmaNoticeKind::kData, 8}), &third);
  lane.expect_refused("rank 2, which has no lane", "a notice from a rank outside the job");
}

// A placement: the payload lands in the buffer the receiver offered, not
// in its ring, between ring bytes written before and after it, and is
// counted by its notices; the sender's loan ends once it was written.
TEST_P(FabricRmaTest, APlacedPayloadLandsInTheOfferedBufferAndIsCounted) {
  LanePair lane(GetParam(), node(), 4096);
  std::vector<uint8_t> destination((1 << 20) + 4096 + 8, 0);
  std::vector<uint8_t> payload((1 << 20) + 8);
  std::mt19937 rng(11);
  for (auto& b : payload) b = static_cast<uint8_t>(rng());
  // Offered at an offset inside a buffer: the region is exactly that range.
  uint8_t* into = destination.data() + 4096;
  const RemoteRegion offered = lane.receiver_side.fabric().register_memory(into, payload.size());
  EXPECT_EQ(offered.size, payload.size());
  lane.rx->allow_placed(payload.size());
  const uint8_t before[] = {1, 2, 3}, after[] = {4, 5};
  ASSERT_EQ(lane.tx->write(before, sizeof before), sizeof before);
  lane.tx->place(payload.data(), payload.size(), offered);
  ASSERT_EQ(lane.tx->write(after, sizeof after), sizeof after);
  std::vector<uint8_t> ring;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((lane.rx->placed_landed() < payload.size() || ring.size() < 5 ||
          lane.tx->placed_written() < payload.size()) &&
         std::chrono::steady_clock::now() < until) {
    lane.tx->progress();
    lane.rx->progress();
    uint8_t buf[16];
    const uint64_t r = lane.rx->read(buf, sizeof buf);
    ring.insert(ring.end(), buf, buf + r);
  }
  EXPECT_EQ(lane.rx->placed_landed(), payload.size());
  EXPECT_EQ(lane.tx->placed_written(), payload.size());
  EXPECT_TRUE(lane.tx->drained());
  EXPECT_EQ(ring, (std::vector<uint8_t>{1, 2, 3, 4, 5})) << "placed bytes went into the ring";
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), into));
  EXPECT_TRUE(std::all_of(destination.begin(), destination.begin() + 4096,
                          [](uint8_t b) { return b == 0; }));
  EXPECT_TRUE(std::all_of(into + payload.size(), destination.data() + destination.size(),
                          [](uint8_t b) { return b == 0; }));
  lane.receiver_side.fabric().deregister_memory(into, payload.size());
}

// Nothing, or more than the offered region holds, is not placed.
TEST_P(FabricRmaTest, LaneRefusesToPlaceNothingOrMoreThanTheOfferedRegion) {
  LanePair lane(GetParam(), node(), 4096);
  std::vector<uint8_t> destination(64), payload(65, 7);
  const RemoteRegion offered =
      lane.receiver_side.fabric().register_memory(destination.data(), destination.size());
  EXPECT_EQ(invalid_argument([&] { lane.tx->place(payload.data(), 0, offered); }),
            "RDMA lane: placing 0 bytes into an offered region of 64");
  EXPECT_EQ(invalid_argument([&] { lane.tx->place(payload.data(), 65, offered); }),
            "RDMA lane: placing 65 bytes into an offered region of 64");
  lane.receiver_side.fabric().deregister_memory(destination.data(), destination.size());
}

// Placed bytes beyond what the receiver offered are refused.
TEST_P(FabricRmaTest, LaneRefusesPlacedBytesItNeverOffered) {
  LanePair lane(GetParam(), node(), 4096);
  std::vector<uint8_t> destination(8192), payload(8192, 7);
  const RemoteRegion offered =
      lane.receiver_side.fabric().register_memory(destination.data(), destination.size());
  lane.rx->allow_placed(4096);
  lane.tx->place(payload.data(), payload.size(), offered);
  try {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < until) {
      lane.tx->progress();
      lane.rx->progress();
    }
    FAIL() << "placed bytes nobody offered were believed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDataCorruption);
    EXPECT_NE(e.message().find("the peer placed 8192 bytes in all, more than the 4096 this "
                               "rank offered"),
              std::string::npos)
        << e.message();
  }
  lane.receiver_side.fabric().deregister_memory(destination.data(), destination.size());
}

// A write that fills the ring to the last byte is taken (progress() says
// something moved); one byte more is past its free space.
TEST_P(FabricRmaTest, LaneTakesAWriteThatExactlyFillsTheRing) {
  LanePair lane(GetParam(), node(), 4096);
  const std::vector<uint8_t> full = pattern(4096, 6), one(1, 1);
  WriteCompletion first, second;
  lane.post_raw(full, 0, encode_rma_notice({0, RmaNoticeKind::kData, 4096, 0}), &first);
  bool moved = false;  // rx->progress() says whether a notice arrived
  for (int i = 0; i < 1000000 && !moved; ++i) {
    lane.sender_side.fabric().progress();
    moved = lane.rx->progress();
  }
  EXPECT_TRUE(moved);
  const uint8_t* data = nullptr;
  ASSERT_EQ(lane.rx->peek(&data), 4096u);
  EXPECT_TRUE(std::equal(full.begin(), full.end(), data));
  lane.post_raw(one, 0, encode_rma_notice({0, RmaNoticeKind::kData, 1, 1}), &second);
  lane.expect_refused("the peer wrote 1 bytes past the ring's free space", "an overfilling write");
}

// Credits: the receiver hands back consumed space once a quarter of the
// ring piled up, though unread bytes remain (while less piled up, the lane
// waits on its reader: drained); a credit for more than was ever sent is
// refused.
TEST_P(FabricRmaTest, LaneCreditsAQuarterOfTheRingAndRefusesCreditsNeverEarned) {
  LanePair lane(GetParam(), node(), 4096);
  EXPECT_TRUE(lane.rx->drained()) << "a new lane owes nothing";
  EXPECT_TRUE(lane.rx->arm_reader()) << "nothing to read";
  EXPECT_FALSE(lane.tx->arm_writer()) << "all of the ring free";
  const std::vector<uint8_t> full = pattern(4096, 8);
  ASSERT_EQ(lane.tx->write(full.data(), full.size()), 4096u);
  EXPECT_FALSE(lane.tx->drained()) << "4096 bytes staged";
  EXPECT_TRUE(lane.tx->arm_writer()) << "the ring full";
  const uint8_t* data = nullptr;
  lane.progress_until([&] { return lane.rx->peek(&data) == 4096; });
  ASSERT_EQ(lane.rx->peek(&data), 4096u);
  EXPECT_FALSE(lane.rx->arm_reader()) << "4096 bytes to read";
  lane.rx->consume(100);
  // Less than a quarter consumed: no credit yet, and the lane waits on its
  // reader, not on its own progress.
  EXPECT_TRUE(lane.rx->drained()) << "unread bytes left";
  lane.rx->consume(924);
  lane.progress_until([&] { return !lane.tx->arm_writer(); });
  EXPECT_EQ(lane.tx->write(full.data(), full.size()), 1024u) << "the quarter consumed, credited";

  WriteCompletion bogus;
  lane.post_raw(std::vector<uint8_t>(8), 0, encode_rma_notice({1, RmaNoticeKind::kCredit, 5000}),
                &bogus, /*to_sender=*/true);
  lane.expect_refused("handed back 5000 bytes it was never sent", "a credit never earned",
                      /*at_sender=*/true);
}

// Bytes read to the end are credited at once, however few: the receiver
// owes nothing then (drained).
TEST_P(FabricRmaTest, LaneCreditsBytesReadToTheEndHoweverFew) {
  LanePair lane(GetParam(), node(), 4096);
  const std::vector<uint8_t> few = pattern(100, 1);
  ASSERT_EQ(lane.tx->write(few.data(), few.size()), few.size());
  EXPECT_EQ(lane.tx->lent_in_use(), 0u) << "copied, not lent";
  std::vector<uint8_t> got(few.size());
  uint64_t read = 0;
  lane.progress_until([&] {
    read += lane.rx->read(got.data() + read, got.size() - read);
    return read == got.size();
  });
  EXPECT_EQ(got, few);
  lane.progress_until([&] { return lane.rx->drained(); });
  EXPECT_TRUE(lane.rx->drained()) << "100 bytes read, not credited";
}

// A payload of exactly kRmaLendMinBytes is lent, not copied: the ring holds
// the caller's memory, and only that (not the copied header before it),
// until its writes completed.
TEST_P(FabricRmaTest, LaneLendsAPayloadOfTheLendingMinimum) {
  LanePair lane(GetParam(), node(), 2 * kRmaLendMinBytes);
  const uint8_t header[16] = {1};
  ASSERT_EQ(lane.tx->write(header, sizeof header), sizeof header);
  const std::vector<uint8_t> payload = pattern(kRmaLendMinBytes, 4);
  ASSERT_EQ(lane.tx->lend(payload.data(), payload.size()), payload.size());
  EXPECT_EQ(lane.tx->lent_in_use(), payload.size());
  lane.progress_until([&] { return lane.tx->lent_in_use() == 0; });
  EXPECT_EQ(lane.tx->lent_in_use(), 0u);
}

TEST_P(FabricRmaTest, LaneRefusesWritesThatLandOutOfOrder) {
  LanePair lane(GetParam(), node(), 4096);
  WriteCompletion completion;
  // The second write's notice arrives first.
  lane.post_raw(std::vector<uint8_t>(16, 1), 16,
                encode_rma_notice({0, RmaNoticeKind::kData, 16, 1}), &completion);
  lane.expect_refused("write 1 landed where write 0 was due", "a write out of order");
}

// shm completes a large write only once its target progresses, so writes stay
// in flight here: an endpoint holds 64 at most (post_write then says "full"),
// and a write() that timed out forgets its own completion only; the others
// still hear theirs.
TEST_P(FabricRmaTest, SixtyFourWritesAreInFlightAndATimedOutOneForgetsOnlyItself) {
  if (std::string(GetParam()) != "shm") GTEST_SKIP() << "tcp;ofi_rxm completes writes locally";
  FabricRma writer(GetParam(), node()), target(GetParam(), node());
  const uint64_t peer = writer.add_peer(target.address());
  // Too large to be copied into the target's inbox on the spot.
  std::vector<uint8_t> landing(64 << 10), source = pattern(64 << 10, 2);
  const RemoteRegion region = target.register_memory(landing.data(), landing.size());
  std::vector<WriteCompletion> completions(64);
  // The first write is taken once the target answered the writer.
  while (!writer.post_write(peer, source.data(), source.size(), region, 0, 1, &completions[0])) {
    writer.progress();
    target.progress();
  }
  try {
    writer.write(peer, source.data(), source.size(), region, 0, 2, 0.05);
    ADD_FAILURE() << "a write the target never progressed completed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kDeadlineExceeded);
  }
  size_t posted = 1;  // and the timed-out one holds a slot
  while (posted < completions.size() &&
         writer.post_write(peer, source.data(), source.size(), region, 0, 1, &completions[posted]))
    ++posted;
  EXPECT_EQ(posted, 63u);
  auto all_done = [&] {
    return std::all_of(completions.begin(), completions.begin() + static_cast<long>(posted),
                       [](const WriteCompletion& c) { return c.done; });
  };
  for (int i = 0; i < 1000000 && !all_done(); ++i) {
    target.progress();
    writer.progress();
  }
  EXPECT_TRUE(all_done());
  EXPECT_TRUE(completions[0].done) << "the timed-out write forgot another's completion";
}

INSTANTIATE_TEST_SUITE_P(Providers, FabricRmaTest, ::testing::Values("tcp;ofi_rxm", "shm"),
                         [](const auto& info) {
                           return std::string(info.param) == "shm" ? "shm" : "tcp_rxm";
                         });

// The notice's rank field has 10 bits.
TEST(RmaEndpoint, AJobOfMoreThan1024RanksIsRefused) {
  EXPECT_NO_THROW(RmaEndpoint(nullptr, 0, kRmaMaxRanks));
  try {
    RmaEndpoint endpoint(nullptr, 0, kRmaMaxRanks + 1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnavailable);
    EXPECT_EQ(e.message(), "RDMA lanes carry at most 1024 ranks, the job has 1025");
  }
}

TEST(RmaRing, ACapacityThatIsNoPowerOfTwoIsRefused) {
  RmaEndpoint endpoint(std::make_unique<FabricRma>("shm"), 0, 2);
  for (uint64_t capacity : {0, 3, 4097}) {
    for (bool receiver : {true, false}) {
      try {
        (receiver ? RmaRing::receiver : RmaRing::sender)(endpoint, capacity);
        ADD_FAILURE() << capacity;
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
        EXPECT_EQ(e.message(),
                  "RDMA ring capacity must be a power of two, got " + std::to_string(capacity));
      }
    }
  }
}

TEST(FabricRma, AnUnknownProviderIsAClearError) {
  try {
    FabricRma endpoint("polychip_no_such_provider");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnavailable);
    EXPECT_NE(e.message().find("no libfabric provider with FI_EP_RDM, FI_MSG and FI_RMA "
                               "(polychip_no_such_provider: "),
              std::string::npos)
        << e.message();
  }
}

// Neither named nor set in the environment (unset or empty): the first
// preferred provider present (here tcp;ofi_rxm, the last, at the latest).
TEST(FabricRma, WithoutAChoiceThePreferredProviderPresentOpens) {
  const auto& preferred = FabricRma::preferred_providers();
  for (const char* env : {static_cast<const char*>(nullptr), ""}) {
    if (env)
      ::setenv("POLYCHIP_NET_PROVIDER", env, 1);
    else
      ::unsetenv("POLYCHIP_NET_PROVIDER");
    FabricRma endpoint("", "127.0.0.1");
    ::unsetenv("POLYCHIP_NET_PROVIDER");
    EXPECT_NE(std::find(preferred.begin(), preferred.end(), endpoint.provider()), preferred.end())
        << endpoint.provider();
  }
}

TEST(FabricRma, TheEnvironmentChoosesTheProvider) {
  ::setenv("POLYCHIP_NET_PROVIDER", "shm", 1);
  FabricRma endpoint;
  ::unsetenv("POLYCHIP_NET_PROVIDER");
  EXPECT_EQ(endpoint.provider(), "shm");
}

}  // namespace
}  // namespace polychip::comm
