// `polychip comm-perf` as a user runs it: bad command lines are refused once
// with exit code 2 before any rank starts, a failing rank names itself, and
// the columns say "none" / -1 / "n/a" where a value would be meaningless.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

struct Outcome {
  int code = -1;
  std::string output;
  double seconds = 0;
};

Outcome polychip(const std::string& arguments, const std::string& environment = "") {
  Outcome o;
  auto start = std::chrono::steady_clock::now();
  std::string command =
      environment + " timeout 120 " + POLYCHIP_EXECUTABLE + " comm-perf " + arguments + " 2>&1";
  FILE* p = ::popen(command.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) o.output.append(buf, n);
  int status = ::pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return o;
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

// Above the bound, ranks were forked by the thousand until fork failed, and
// a SIGTERM waited for the last of them.
TEST(CommPerfCli, NpOutsideOneToTheLocalBoundIsAUsageError) {
  for (const char* np : {"0", "-3", "1025", "100000"}) {
    Outcome o = polychip(std::string("--np ") + np + " -b 8 -e 8");
    EXPECT_EQ(o.code, 2) << o.output;
    EXPECT_NE(o.output.find("--np must be between 1 and 1024, got " + std::string(np)),
              std::string::npos)
        << o.output;
    EXPECT_EQ(o.output.find("launcher environment"), std::string::npos) << o.output;
  }
}

// 24 ranks need about 133 open files each (rank 0 156). A soft limit of 80
// is raised (the job runs); a hard limit of 100 is said at once by every
// rank, where the ranks that ran out of files half-way through the mesh left
// the others waiting for the 300 s timeout.
TEST(CommPerfCli, AnOpenFileLimitTooLowForTheJobIsRaisedOrSaidAtOnce) {
  const Outcome raised = polychip("--np 24 -b 8 -e 8 -n 1 -w 0", "ulimit -S -n 80;");
  EXPECT_EQ(raised.code, 0) << raised.output;
  const Outcome refused = polychip("--np 24 -b 8 -e 8 -n 1 -w 0", "ulimit -n 100;");
  EXPECT_EQ(refused.code, 3) << refused.output;
  EXPECT_EQ(occurrences(refused.output,
                        "a 24-rank job needs about 133 open files in this "
                        "process; it may hold 100 (ulimit -n) and at most 100"),
            23u)
      << refused.output;
  EXPECT_NE(refused.output.find("a 24-rank job (this rank serving its rendezvous store) needs "
                                "about 156 open files"),
            std::string::npos)
      << refused.output;
  EXPECT_LT(refused.seconds, 60) << refused.output;
}

TEST(CommPerfCli, UnknownDeviceIsNamedOnceWithinSeconds) {
  Outcome o = polychip("--np 2 --devices cpu,nosuch -b 8 -e 8");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_LT(o.seconds, 5) << o.output;
  EXPECT_EQ(occurrences(o.output, "nosuch"), 1u) << o.output;
}

// Refused with exit code 2 before any rank starts. Each used to do worse:
// empty --devices entries left a rank none to take (SIGFPE) or shifted ranks
// onto other devices, "-8" wrapped to a size near 2^64, a size that is not
// whole elements ran as fewer bytes, and a bad unit was an internal error.
TEST(CommPerfCli, MalformedSizesAndDeviceListsAreUsageErrors) {
  const struct {
    const char* args;
    const char* message;
  } refused[] = {
      {"--devices ,,", "--devices: an empty entry"},
      {"--devices cpu,,cpu", "--devices: an empty entry"},
      {"--devices ''", "--devices: is empty"},
      {"-b -8", "--min-bytes: '-8' is not a size"},
      {"-b ' 8'", "--min-bytes: ' 8' is not a size"},
      {"-e 99999999999999999999", "--max-bytes: '99999999999999999999' is too large"},
      {"-e 17179869184G", "--max-bytes: '17179869184G' is too large"},
      {"-b 8X", "--min-bytes: unknown unit 'X' in '8X' (K, M, G)"},
      {"--sizes 8,3", "--sizes: 3 is not a multiple of f32's 4 bytes"},
      {"--sizes 8,,16", "--sizes: '' is not a size"},
      {"-J ''", "--json: is empty"},
      // Steps of a byte up to 64 MiB; 8 TiB of buffers (an OOM-killed rank before).
      {"-f 1.0000001", "make more than 10000 sizes: raise --step-factor or list --sizes"},
      {"--sizes 8,1024G",
       "a size of 1099511627776 bytes needs at least 8192.0 GiB of host "
       "memory for 2 ranks"},
  };
  for (const auto& c : refused) {
    Outcome o = polychip(std::string("--np 2 ") + c.args);
    EXPECT_EQ(o.code, 2) << c.args << "\n" << o.output;
    EXPECT_EQ(occurrences(o.output, c.message), 1u) << c.args << "\n" << o.output;
  }
  // 16G parses; only its order against --max-bytes is refused.
  EXPECT_NE(polychip("--np 2 -b 16G -e 8").output.find("--min-bytes is larger than --max-bytes"),
            std::string::npos);
}

// A step factor of inf (or 1e300) converted size * factor, past 2^64, to 0:
// the sizes grew by a byte each, 1017 cases for -b 8 -e 1K.
TEST(CommPerfCli, AnEndlessStepFactorRunsTheSmallestAndLargestSizes) {
  for (const char* factor : {"inf", "1e300"}) {
    const Outcome o = polychip(std::string("--np 2 -b 8 -e 1K -n 0 -w 0 -f ") + factor);
    EXPECT_EQ(o.code, 0) << o.output;
    EXPECT_EQ(occurrences(o.output, "\n           8 "), 1u) << o.output;
    EXPECT_EQ(occurrences(o.output, "\n        1024 "), 1u) << o.output;
    EXPECT_EQ(occurrences(o.output, "direct/host/"), 2u) << o.output;
  }
}

TEST(CommPerfCli, RootOutsideTheRanksIsReportedOnceWithoutATable) {
  Outcome o = polychip("-c broadcast -r 5 --np 2 -b 8 -e 8");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_EQ(occurrences(o.output, "--root 5 is outside [0, 2)"), 1u) << o.output;
  EXPECT_EQ(o.output.find("# polychip comm-perf"), std::string::npos) << o.output;
}

// Every rank fails the same way here; each line says which rank it is.
TEST(CommPerfCli, AFailingRankNamesItselfAndExitsWithThree) {
  Outcome o = polychip("--np 2 -b 8 -e 8", "POLYCHIP_COMM_TRANSPORT=bogus");
  EXPECT_EQ(o.code, 3) << o.output;
  EXPECT_NE(o.output.find("rank 0: POLYCHIP_COMM_TRANSPORT='bogus'"), std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("rank 1: POLYCHIP_COMM_TRANSPORT='bogus'"), std::string::npos)
      << o.output;
}

// --json replaces its file whole (written beside it, then renamed), and a
// folder it cannot write in is named with the failing call.
TEST(CommPerfCli, JsonResultsReplaceTheFileWholeAndAnUnwritableOneIsRefusedFirst) {
  char dir_template[] = "/tmp/polychip_comm_perf_json_XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template, path = dir + "/perf.json";
  FILE* old = std::fopen(path.c_str(), "w");
  ASSERT_NE(old, nullptr);
  std::fputs("an older, longer file that a partial write would leave a tail of ...........", old);
  std::fclose(old);
  Outcome o = polychip("--np 2 -b 8 -e 8 -w 0 -n 1 -J " + path);
  ASSERT_EQ(o.code, 0) << o.output;
  FILE* f = std::fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  EXPECT_EQ(text.rfind("{", 0), 0u) << text;
  EXPECT_EQ(text.substr(text.size() - 2), "}\n") << text;
  EXPECT_EQ(std::system(("test \"$(ls -A " + dir + ")\" = perf.json").c_str()), 0)
      << "a temporary file was left beside it";
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
  // Refused before the run (after it, rank 0 failed and the others with it).
  o = polychip("--np 2 -b 8 -e 8 -w 0 -n 1 -J /nonexistent_polychip_dir/perf.json");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("--json '/nonexistent_polychip_dir/perf.json': no folder "
                          "'/nonexistent_polychip_dir'"),
            std::string::npos)
      << o.output;
  o = polychip("--np 2 -b 8 -e 8 -w 0 -n 1 -J /tmp");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("--json '/tmp' is a folder: name the results file"), std::string::npos)
      << o.output;
}

// Rows: size count type redop root, then time algbw busbw #wrong twice.
TEST(CommPerfCli, ColumnsWithoutMeaningSayNoneAndChecksOnlyRunsAreNotTimed) {
  Outcome o = polychip("-c all -n 0 -w 0 -o max -r 1 -b 64 -e 64 --np 2");
  ASSERT_EQ(o.code, 0) << o.output;
  std::istringstream lines(o.output);
  std::string line, collective;
  int rows = 0;
  while (std::getline(lines, line)) {
    const std::string header = "# polychip comm-perf: ";
    if (line.rfind(header, 0) == 0) {
      collective = line.substr(header.size(), line.find(',') - header.size());
      EXPECT_NE(line.find("nothing timed"), std::string::npos) << line;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string field; fields >> field;) f.push_back(field);
    ASSERT_EQ(f.size(), 14u) << line;
    const bool reduces =
        collective == "all_reduce" || collective == "reduce_scatter" || collective == "reduce";
    const bool rooted = collective == "broadcast" || collective == "reduce";
    EXPECT_EQ(f[3], reduces ? "max" : "none") << collective << ": " << line;
    EXPECT_EQ(f[4], rooted ? "1" : "-1") << collective << ": " << line;
    for (int k : {5, 6, 7, 9, 10, 11}) EXPECT_EQ(f[k], "n/a") << collective << ": " << line;
    EXPECT_EQ(f[8], "0") << line;
    ++rows;
  }
  EXPECT_EQ(rows, 7) << o.output;
}

// libfabric is opened by the first RDMA lane, not at start-up: loading it
// runs its provider libraries' constructors (~0.2 s of clock calibration
// here), which every process paid when it was linked. The dynamic loader
// names every library it loads under LD_DEBUG=files.
TEST(CommPerfCli, LibfabricLoadsOnlyWhenAnRdmaLaneIsUsed) {
  const std::string quiet_job = "--np 2 -c all_reduce -b 8 -e 8 -w 0 -n 0";
  Outcome shm = polychip(quiet_job, "LD_DEBUG=files");
  ASSERT_EQ(shm.code, 0) << shm.output;
  EXPECT_EQ(shm.output.find("libfabric"), std::string::npos) << shm.output;
  Outcome tcp = polychip(quiet_job, "LD_DEBUG=files POLYCHIP_COMM_TRANSPORT=tcp");
  ASSERT_EQ(tcp.code, 0) << tcp.output;
  EXPECT_EQ(tcp.output.find("libfabric"), std::string::npos) << tcp.output;
  Outcome rdma =
      polychip(quiet_job, "LD_DEBUG=files POLYCHIP_COMM_TRANSPORT=rdma POLYCHIP_NET_PROVIDER=shm");
  ASSERT_EQ(rdma.code, 0) << rdma.output;
  EXPECT_NE(rdma.output.find("file=libfabric.so.1"), std::string::npos) << rdma.output;
}

}  // namespace
