// The `comm` conformance suite: every collective x dtype x boundary size run
// across a mix of adapters (one rank per device spec, e.g. cpu, sim.*,
// opencl), each result checked bit for bit on every rank. Each group of
// cases runs as `polychip comm-perf --np N` child processes, so a crash or
// hang in one case is contained and reported, never fatal to the caller.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace polychip::comm {

struct CommCaseRecord {
  std::string collective;
  std::string dtype;
  std::string op;
  uint64_t bytes = 0;
  uint64_t offset = 0;                    // bytes from the start of each buffer's allocation
  std::vector<std::string> device_types;  // per rank
  std::string algorithm, path;
  std::string transport;  // what ran ("shm", "tcp", ...); on "error", what was asked for
  std::string verdict;    // "pass", "fail" (#wrong > 0), "error" (the run failed)
  uint64_t wrong = 0;     // out-of-place + in-place, summed over ranks
  uint64_t outside = 0;   // of wrong: bytes written before or after a buffer
  std::string error;
  // Wall time of the comm-perf child that ran this case, shared equally
  // among the cases that child ran (one child runs a group of cases).
  double seconds = 0;
};

// A group of cases that one comm-perf child runs: op "sum" runs every
// collective, another op the all-reduce alone; each buffer `offset_bytes`
// into its allocation.
struct CommCaseGroup {
  std::string transport;  // the pass (path_environment)
  std::string dtype;
  std::string op;
  uint64_t offset_bytes = 0;
};

struct CommSuiteOptions {
  std::string polychip_executable;  // the `polychip` tool; "" = /proc/self/exe
  std::vector<std::string> devices = {"cpu", "sim.faithful", "opencl"};  // rank r: devices[r]
  std::vector<std::string> dtypes = {"f32", "f16", "bf16", "f64", "i32", "i64"};
  std::vector<std::string> ops = {"sum", "prod", "min", "max", "avg"};  // all_reduce; others: sum
  // The passes (path_environment): "auto" certifies the links ranks on one
  // host use (shared memory), "tcp" the ones between hosts, "rdma" the
  // H2D-RDMA lanes (POLYCHIP_NET_PROVIDER, else the first provider that
  // opens), "gdr" the GDR path (op sum only: every collective but
  // all-to-all and send/recv goes GDR; those, and every case of a pool where
  // some rank cannot take it, run over "rdma").
  std::vector<std::string> transports = {"auto", "tcp", "rdma", "gdr"};
  uint64_t max_bytes = 4ull << 20;  // boundary_sizes up to here (and just past it)
  // A last pass (auto transport, every collective, op sum) with every buffer
  // this many elements into its allocation; 0: none.
  uint64_t offset_elements = 1;
  double timeout_seconds = 60;  // POLYCHIP_COMM_TIMEOUT of the children
  std::string work_dir = "/tmp";
  // Called after each group of cases (one comm-perf child) with the group,
  // its index, the number of groups and the group's records.
  std::function<void(const CommCaseGroup& group, size_t index, size_t groups,
                     std::span<const CommCaseRecord> records)>
      progress;
};

// The environment a pass's children run under: "POLYCHIP_COMM_TRANSPORT=tcp ",
// "... POLYCHIP_COMM_PATH=gdr ", ...
std::string path_environment(const std::string& pass);

// The message sizes (bytes, ascending) the suite runs for elements of
// `element_size` bytes over `ranks` ranks: 0, one element, a count no rank
// count divides, and around every boundary the comm code has — the page and
// the shm ring's control block (4 KiB), the direct/ring switch (64 KiB), the
// reduce piece (256 KiB), the pipelining chunk and the shm ring (1 MiB), the
// largest frame (64 MiB) — the boundary itself and
// one element and one element per rank on either side. Boundaries above
// `max_bytes` are left out.
std::vector<uint64_t> boundary_sizes(uint64_t max_bytes, int ranks, uint64_t element_size);

std::vector<CommCaseRecord> run_comm_suite(const CommSuiteOptions& options);

}  // namespace polychip::comm
