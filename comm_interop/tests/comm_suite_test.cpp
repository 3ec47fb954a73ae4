// The `comm` conformance suite end to end on a small matrix: real
// `polychip comm-perf --np 2` children, ranks on the cpu and sim adapters.
#include <set>

#include <gtest/gtest.h>

#include "polychip/comm/conformance_suite.hpp"

using namespace polychip::comm;

TEST(CommSuite, RecordsEveryCaseWithDeviceTypesPathAndVerdict) {
  CommSuiteOptions o;
  o.polychip_executable = POLYCHIP_EXECUTABLE;
  o.devices = {"cpu", "sim.faithful"};
  o.dtypes = {"f32", "bf16"};
  o.ops = {"sum", "avg"};
  o.max_bytes = 64 << 10;
  o.step_factor = 64;
  std::vector<CommCaseRecord> records = run_comm_suite(o);
  std::set<std::string> collectives;
  for (const CommCaseRecord& r : records) {
    EXPECT_EQ(r.verdict, "pass") << r.collective << " " << r.dtype << " " << r.op << " " << r.bytes
                                 << ": " << r.error;
    ASSERT_EQ(r.device_types.size(), 2u);
    EXPECT_EQ(r.device_types[1], "sim.faithful");
    EXPECT_FALSE(r.transport.empty());
    collectives.insert(r.collective);
  }
  EXPECT_EQ(collectives.size(), 7u);  // every collective
  EXPECT_GE(records.size(), 7u * 3 * 2);
}

TEST(CommSuite, AFailingRunIsAnErrorRecordNotACrash) {
  CommSuiteOptions o;
  o.polychip_executable = POLYCHIP_EXECUTABLE;
  o.devices = {"cpu", "no_such_device"};
  o.dtypes = {"f32"};
  o.ops = {"sum"};
  o.max_bytes = 64;
  o.timeout_seconds = 5;
  std::vector<CommCaseRecord> records = run_comm_suite(o);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].verdict, "error");
  EXPECT_NE(records[0].error.find("no_such_device"), std::string::npos) << records[0].error;
}
