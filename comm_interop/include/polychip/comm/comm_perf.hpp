// `polychip comm-perf`: nccl-tests compatible measurements of polychip's
// collectives, with every result checked (#wrong).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "polychip/comm/types.hpp"

namespace polychip::comm {

struct PerfOptions {
  std::string collective = "all_reduce";  // or "all" for every collective
  std::string dtype = "f32";
  std::string op = "sum";
  int root = 0;
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 64ull << 20;
  double step_factor = 2;
  // Explicit sizes in bytes, run in this order instead of min..max by factor.
  std::vector<uint64_t> sizes;
  // Every buffer starts this many bytes into its allocation (a multiple of
  // the dtype's size); the bytes around it are guards checked after each case.
  uint64_t offset_bytes = 0;
  int warmup = 5;
  int iterations = 20;
  // Device spec per rank, comma separated, rank r uses entry r % size
  // ("cpu", "sim.faithful", "opencl"); empty: host memory.
  std::string devices;
  // POLYCHIP_COMM_PATH for every rank (auto, host, hierarchical, gdr);
  // empty: the environment's.
  std::string path;
  std::string json_path;  // written by rank 0
  std::optional<int> np;  // given: spawn np local ranks (built-in launcher)
};

// "64M", "8K", "1G", "4096" -> bytes (binary units, as nccl-tests). Throws
// INVALID_ARGUMENT naming `option` on a malformed size.
uint64_t parse_size(const std::string& text, const char* option);
// "0,4092,4K,64M" -> sizes, each parsed as parse_size does.
std::vector<uint64_t> parse_size_list(const std::string& text, const char* option);

// Exit codes (docs/comm.md): 0 every result correct; 1 some #wrong; 2 bad
// command line, message printed once, nothing ran; 3 a rank failed (its
// error on stderr, prefixed "rank N:"). With --np, the local launcher's code:
// the first failed rank's, or 128 + N when signal N ended it.
inline constexpr int kPerfExitWrong = 1;
inline constexpr int kPerfExitUsage = 2;
int run_comm_perf(const PerfOptions& options);

}  // namespace polychip::comm
