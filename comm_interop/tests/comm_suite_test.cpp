// The `comm` conformance suite end to end on a small matrix: real
// `polychip comm-perf --np 2` children, ranks on the cpu and sim adapters.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "polychip/comm/conformance_suite.hpp"

using namespace polychip::comm;

namespace {

// The suite in f32 sums up to `max_bytes`, one rank on cpu and one on `device`.
std::vector<CommCaseRecord> run_f32_sums_with(const std::string& device, uint64_t max_bytes) {
  CommSuiteOptions o;
  o.polychip_executable = POLYCHIP_EXECUTABLE;
  o.devices = {"cpu", device};
  o.dtypes = {"f32"};
  o.ops = {"sum"};
  o.max_bytes = max_bytes;
  return run_comm_suite(o);
}

}  // namespace

TEST(CommSuite, RecordsEveryCaseWithDeviceTypesPathAndVerdict) {
  CommSuiteOptions o;
  o.polychip_executable = POLYCHIP_EXECUTABLE;
  o.devices = {"cpu", "sim.faithful"};
  o.dtypes = {"f32", "bf16"};
  o.ops = {"sum", "avg"};
  o.max_bytes = 64 << 10;
  std::vector<CommCaseRecord> records = run_comm_suite(o);
  std::set<std::string> collectives, transports, gdr_collectives;
  for (const CommCaseRecord& r : records) {
    EXPECT_EQ(r.verdict, "pass") << r.collective << " " << r.dtype << " " << r.op << " " << r.bytes
                                 << ": " << r.error;
    ASSERT_EQ(r.device_types.size(), 2u);
    EXPECT_EQ(r.device_types[1], "sim.faithful");
    EXPECT_FALSE(r.transport.empty());
    collectives.insert(r.collective);
    // "gdr:<provider>": the provider is whichever opened first here.
    transports.insert(r.transport.rfind("gdr:", 0) == 0 ? "gdr" : r.transport);
    if (r.transport.rfind("gdr:", 0) == 0) {
      EXPECT_NE(r.collective, "all_to_all");
      EXPECT_NE(r.collective, "send_recv");
      gdr_collectives.insert(r.collective);
    }
  }
  EXPECT_EQ(collectives.size(), 7u);  // every collective
  // The links a mixed pool uses: shared memory on one host, TCP and RDMA
  // lanes between hosts, and GDR (every collective but all-to-all and
  // send/recv; cpu and sim export their memory).
  EXPECT_EQ(transports, (std::set<std::string>{"shm", "tcp", "rdma", "gdr"}));
  EXPECT_EQ(gdr_collectives, (std::set<std::string>{"all_reduce", "reduce_scatter", "all_gather",
                                                    "broadcast", "reduce"}));
  EXPECT_GE(records.size(), 3u * 7 * 3 * 2);
}

TEST(CommSuite, SizesSitOnAndAroundEveryBoundary) {
  // f32 over 3 ranks up to 64 KiB: the page and the direct/ring switch.
  EXPECT_EQ(boundary_sizes(64 << 10, 3, 4),
            (std::vector<uint64_t>{0, 4, 28, 4084, 4092, 4096, 4100, 4108, 65524, 65532, 65536,
                                   65540, 65548}));
  const std::vector<uint64_t> standard = boundary_sizes(4 << 20, 2, 2);
  for (uint64_t boundary : {256u << 10, 1u << 20})
    for (uint64_t size : {boundary - 4, boundary - 2, boundary, boundary + 2, boundary + 4})
      EXPECT_TRUE(std::count(standard.begin(), standard.end(), size)) << size;
  EXPECT_EQ(standard.back(), (1u << 20) + 4);
}

// A device whose copies to the host corrupt the last byte of transfers that
// are not whole 4 KiB pages passes sizes that are (the suite's old 0, 64 B,
// 4 KiB) and fails the sizes just off a page, on every link and with offset
// buffers — the case a new user saw pass every level.
TEST(CommSuite, ACopyTailDefectFailsOffPageSizesOnly) {
  std::set<uint64_t> failing_sizes;
  std::set<std::string> failing_links;
  bool offset_failed = false;
  for (const CommCaseRecord& r : run_f32_sums_with("sim.copy_tail", 64 << 10)) {
    ASSERT_NE(r.verdict, "error") << r.error;
    if (r.verdict != "fail") continue;
    failing_sizes.insert(r.bytes);
    failing_links.insert(r.transport.rfind("gdr:", 0) == 0 ? "gdr" : r.transport);
    offset_failed |= r.offset > 0;
  }
  for (uint64_t size : failing_sizes) {
    EXPECT_GT(size, 4096u) << size;
    EXPECT_NE(size % 4096, 0u) << size;
  }
  EXPECT_TRUE(failing_sizes.count(4100)) << "one element past a page";
  // GDR moves no byte through the host, but the result still reaches the
  // host through the faulty copy when it is read.
  EXPECT_EQ(failing_links, (std::set<std::string>{"shm", "tcp", "rdma", "gdr"}));
  EXPECT_TRUE(offset_failed);
}

// A device whose uploads to a destination off a 64-byte line zero the bytes
// of that line before it: every buffer at offset 0 is exact, and the offset
// buffers fail on the guard bytes in front of them, counted as bytes written
// outside, not as wrong elements. (With the guard in front unchecked, every
// case passed.)
TEST(CommSuite, ACopyHeadDefectFailsOffsetBuffersOnTheGuardBytesBeforeThem) {
  std::set<std::string> failing_collectives;
  for (const CommCaseRecord& r : run_f32_sums_with("sim.copy_head", 4 << 10)) {
    ASSERT_NE(r.verdict, "error") << r.error;
    if (r.offset == 0 || r.bytes == 0) {
      EXPECT_EQ(r.verdict, "pass") << r.collective << " " << r.bytes << " at offset " << r.offset;
      continue;
    }
    EXPECT_EQ(r.verdict, "fail") << r.collective << " " << r.bytes;
    EXPECT_GT(r.outside, 0u) << r.collective << " " << r.bytes;
    EXPECT_EQ(r.wrong, r.outside) << r.collective << " " << r.bytes << ": the elements are right";
    failing_collectives.insert(r.collective);
  }
  EXPECT_EQ(failing_collectives.size(), 7u);
}

// An unknown device is refused before any rank starts, and the suite does
// not start the remaining groups only to have them refused the same way.
TEST(CommSuite, AFailingRunIsAnErrorRecordNotACrash) {
  CommSuiteOptions o;
  o.polychip_executable = POLYCHIP_EXECUTABLE;
  o.devices = {"cpu", "no_such_device"};
  o.dtypes = {"f32", "f64"};
  o.ops = {"sum", "max"};
  o.transports = {"auto", "tcp"};
  o.max_bytes = 64;
  o.timeout_seconds = 5;
  std::vector<CommCaseRecord> records = run_comm_suite(o);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].verdict, "error");
  EXPECT_NE(records[0].error.find("no_such_device"), std::string::npos) << records[0].error;
}

TEST(CommPerf, RunsUnderMpirunAndWritesJson) {
  if (std::system("command -v mpirun > /dev/null") != 0) GTEST_SKIP() << "mpirun not installed";
  std::string json = "/tmp/polychip_comm_perf_test_" + std::to_string(::getpid()) + ".json";
  std::string cmd = std::string("timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 ") +
                    POLYCHIP_EXECUTABLE + " comm-perf -c all -d f16 -o avg -b 8 -e 256K -f 32 " +
                    "-w 1 -n 2 -J " + json + " > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(json);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string doc = ss.str();
  std::remove(json.c_str());
  EXPECT_NE(doc.find("\"schema\": \"polychip.comm_perf/1\""), std::string::npos) << doc;
  EXPECT_NE(doc.find("\"wrong_total\": 0"), std::string::npos) << doc;
  EXPECT_NE(doc.find("\"busbw_gbps\""), std::string::npos);
}
