#include "polychip/comm/comm_perf.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "polychip/atomic_file.hpp"
#include "polychip/comm/case_runner.hpp"
#include "polychip/comm/communicator.hpp"
#include "polychip/comm/local_launcher.hpp"
#include "polychip/comm/rank_devices.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"

namespace polychip::comm {
namespace {

// nccl-tests prints redop "none" and root -1 for collectives without them.
bool has_reduction(const std::string& c) {
  return c == "all_reduce" || c == "reduce_scatter" || c == "reduce";
}
bool has_root(const std::string& c) { return c == "broadcast" || c == "reduce"; }

void check_root(const PerfOptions& o, int ranks) {
  if (o.root < 0 || o.root >= ranks) {
    throw_error(StatusCode::kInvalidArgument, "--root " + std::to_string(o.root) +
                                                  " is outside [0, " + std::to_string(ranks) +
                                                  ") for " + std::to_string(ranks) + " rank(s)");
  }
}

// "%9.1f"-style cell, or "n/a" when -n 0 timed nothing.
std::string timing_cell(bool timed, double value, int precision) {
  if (!timed) return "n/a";
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", precision, value);
  return text;
}

// The sizes of one pass: the explicit list, or min..max growing by the
// step factor (max itself always included).
// `at_most`: stop counting past it (validate() asks how many there are).
std::vector<uint64_t> sizes_to_run(const PerfOptions& o,
                                   size_t at_most = std::numeric_limits<size_t>::max()) {
  if (!o.sizes.empty()) return o.sizes;
  std::vector<uint64_t> sizes;
  for (uint64_t size = o.min_bytes; sizes.size() < at_most;) {
    sizes.push_back(size);
    if (size >= o.max_bytes) break;
    // In double up to max: a product past 2^64 (a factor of 1e300 or inf)
    // converted to an integer is undefined, and came out 0 (steps of 1 B).
    const double next = static_cast<double>(size) * o.step_factor;
    size = next >= static_cast<double>(o.max_bytes)
               ? o.max_bytes
               : std::max(static_cast<uint64_t>(next), size + 1);
  }
  return sizes;
}

// MemAvailable of /proc/meminfo in bytes; 0 where it cannot be read.
uint64_t available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") return kib << 10;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

int run_rank(const PerfOptions& o) {
  CommConfig config = CommConfig::from_environment();
  std::optional<Device> device;
  if (!o.devices.empty()) {
    LaunchInfo launch = detect_launch();
    const auto specs = rank_device_list(o.devices, "--devices");
    device = Runtime::global().device(specs[launch.rank % specs.size()]);
    config.device_type = device->device_type();
    config.vendor = device->adapter_name();
  }
  auto comm = Communicator::from_environment(config);
  const int n = comm->size();
  const bool lead = comm->rank() == 0;
  check_root(o, n);
  const bool timed = o.iterations > 0;
  DType dtype = parse_dtype(o.dtype);
  check_comm_dtype(dtype, "--dtype");
  ReduceOp op = parse_reduce_op(o.op);
  std::vector<std::string> collectives =
      o.collective == "all" ? collective_names() : std::vector<std::string>{o.collective};
  CaseRunner runner(*comm, device ? &*device : nullptr);
  nlohmann::json doc;
  doc["schema"] = "polychip.comm_perf/1";
  doc["ranks"] = n;
  nlohmann::json devices = nlohmann::json::array();
  for (const RankInfo& r : comm->ranks()) devices.push_back(r.device_type);
  doc["device_types"] = devices;
  doc["results"] = nlohmann::json::array();
  uint64_t wrong_total = 0;
  for (const std::string& c : collectives) {
    if (lead) {
      std::printf("# polychip comm-perf: %s, %d ranks, dtype %s, op %s, devices %s%s\n", c.c_str(),
                  n, o.dtype.c_str(), o.op.c_str(), o.devices.empty() ? "host" : o.devices.c_str(),
                  timed ? "" : " (-n 0: results checked, nothing timed)");
      std::printf("#%11s %12s %8s %6s %6s  %9s %8s %8s %6s  %9s %8s %8s %6s  %s\n", "size", "count",
                  "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                  "busbw", "#wrong", "algo/path/transport");
      std::printf("#%11s %12s %8s %6s %6s  %9s %8s %8s %6s  %9s %8s %8s %6s\n", "(B)", "(elements)",
                  "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    }
    uint64_t previous_bytes = UINT64_MAX;
    for (uint64_t size : sizes_to_run(o)) {
      uint64_t bytes = runner.round_size(c, dtype, size);
      if (bytes == previous_bytes) continue;  // sizes that round to the same case run once
      previous_bytes = bytes;
      nlohmann::json row;
      double times[2];
      uint64_t wrong[2], outside[2];
      CaseResult results[2];
      for (int in_place = 0; in_place < 2; ++in_place) {
        CaseSpec spec{c, dtype, op, bytes, o.root, in_place == 1, o.offset_bytes};
        results[in_place] = runner.run(spec, o.warmup, o.iterations);
        // Slowest rank's time and everyone's wrong count, as nccl-tests reports.
        double t = results[in_place].seconds, t_max = 0;
        int64_t w[2] = {static_cast<int64_t>(results[in_place].wrong),
                        static_cast<int64_t>(results[in_place].outside)},
                w_sum[2] = {0, 0};
        comm->all_reduce(&t, &t_max, 1, DType::kF64, ReduceOp::kMax);
        comm->all_reduce(w, w_sum, 2, DType::kI64, ReduceOp::kSum);
        times[in_place] = t_max;
        wrong[in_place] = static_cast<uint64_t>(w_sum[0]);
        outside[in_place] = static_cast<uint64_t>(w_sum[1]);
        wrong_total += wrong[in_place];
      }
      // The path that ran somewhere in the job (staging on one rank counts).
      int32_t path = static_cast<int32_t>(results[0].record.path), job_path = 0;
      comm->all_reduce(&path, &job_path, 1, DType::kI32, ReduceOp::kMax);
      results[0].record.path = static_cast<DataPath>(job_path);
      if (lead) {
        const CallRecord& rec = results[0].record;
        auto algbw = [&](double t) { return t > 0 ? bytes / t / 1e9 : 0.0; };
        double factor = bus_bandwidth_factor(c, n);
        std::string how = std::string(algorithm_name(rec.algorithm)) + "/" +
                          std::string(data_path_name(rec.path)) + "/" + rec.transport;
        const std::string redop = has_reduction(c) ? o.op : "none";
        const int root = has_root(c) ? o.root : -1;
        std::printf("%12llu %12llu %8s %6s %6d", (unsigned long long)bytes,
                    (unsigned long long)results[0].count, o.dtype.c_str(), redop.c_str(), root);
        for (int k = 0; k < 2; ++k) {
          std::printf("  %9s %8s %8s %6llu", timing_cell(timed, times[k] * 1e6, 1).c_str(),
                      timing_cell(timed, algbw(times[k]), 3).c_str(),
                      timing_cell(timed, algbw(times[k]) * factor, 3).c_str(),
                      (unsigned long long)wrong[k]);
        }
        std::printf("  %s\n", how.c_str());
        std::fflush(stdout);
        nlohmann::json r;
        r["collective"] = c;
        r["size"] = bytes;
        r["count"] = results[0].count;
        r["type"] = o.dtype;
        r["redop"] = redop;
        r["root"] = root;
        r["offset"] = o.offset_bytes;
        for (int k = 0; k < 2; ++k) {
          nlohmann::json m;
          if (timed) {
            m["time_us"] = times[k] * 1e6;
            m["algbw_gbps"] = algbw(times[k]);
            m["busbw_gbps"] = algbw(times[k]) * factor;
          } else {  // -n 0: checked, not timed
            m["time_us"] = m["algbw_gbps"] = m["busbw_gbps"] = nullptr;
          }
          m["wrong"] = wrong[k];
          m["outside"] = outside[k];  // of wrong: bytes written before or after a buffer
          r[k == 0 ? "out_of_place" : "in_place"] = m;
        }
        r["algorithm"] = std::string(algorithm_name(rec.algorithm));
        r["path"] = std::string(data_path_name(rec.path));
        r["transport"] = rec.transport;
        r["mailbox"] = rec.mailbox;
        doc["results"].push_back(r);
      }
    }
  }
  if (lead) {
    std::printf("# Out of bounds values : %llu %s\n", (unsigned long long)wrong_total,
                wrong_total ? "FAILED" : "OK");
    doc["wrong_total"] = wrong_total;
    if (!o.json_path.empty()) {
      write_file_atomically(o.json_path, doc.dump(2) + "\n");
    }
    std::fflush(stdout);
  }
  // No rank exits before rank 0 has written everything: the launcher ends
  // the job when the first rank exits with a failure code.
  comm->barrier();
  return wrong_total ? kPerfExitWrong : 0;
}

// Errors a rank raises carry its number: several ranks print to one terminal.
int run_rank_named(const PerfOptions& o) {
  std::optional<int> rank;
  try {
    rank = detect_launch().rank;
  } catch (const Error&) {
  }
  try {
    return run_rank(o);
  } catch (const Error& e) {
    if (!rank) throw;
    throw e.annotate("rank " + std::to_string(*rank));
  }
}

constexpr size_t kMaxSizes = 10000;

// Every rank of a local job holds about five buffers of the largest size
// (input, output, expected values, the output read back, guard bytes; peak
// RSS measured 4.1-5.2 times the size at 256 MiB): sizes this host cannot
// hold four times over are refused before the kernel's out-of-memory killer
// ends a rank mid-job with a bare SIGKILL.
void check_host_memory(const PerfOptions& o, int np) {
  // (a range always ends at --max-bytes)
  const uint64_t largest =
      o.sizes.empty() ? o.max_bytes : *std::max_element(o.sizes.begin(), o.sizes.end());
  const double needed = 4.0 * np * (static_cast<double>(largest) + o.offset_bytes);
  const uint64_t available = available_host_memory();
  if (available == 0 || needed <= static_cast<double>(available)) return;
  constexpr double kGiB = 1 << 30;
  throw_error(
      StatusCode::kInvalidArgument,
      fmt::format("a size of {} bytes{} needs at least {:.1f} GiB of host memory for {} "
                  "ranks (four buffers of it each); this host has {:.1f} GiB available",
                  largest, o.offset_bytes ? fmt::format(" at --offset {}", o.offset_bytes) : "",
                  needed / kGiB, np, available / kGiB));
}

// Everything that can be checked before any rank starts; INVALID_ARGUMENT
// names the option.
void validate(const PerfOptions& o) {
  if (o.np) check_local_rank_count(*o.np);
  if (o.min_bytes > o.max_bytes) {
    throw_error(StatusCode::kInvalidArgument, "--min-bytes is larger than --max-bytes");
  }
  if (!(o.step_factor > 1)) throw_error(StatusCode::kInvalidArgument, "--step-factor must be > 1");
  // A factor just above 1 steps by a byte: days of cases, none of them asked for.
  if (const size_t count = sizes_to_run(o, kMaxSizes + 1).size(); count > kMaxSizes)
    throw_error(StatusCode::kInvalidArgument,
                "--min-bytes, --max-bytes and --step-factor make more than " +
                    std::to_string(kMaxSizes) + " sizes: raise --step-factor or list --sizes");
  if (o.iterations < 0 || o.warmup < 0) {
    throw_error(StatusCode::kInvalidArgument, "--iters and --warmup must be >= 0");
  }
  if (o.collective != "all") {
    bool known = false;
    for (auto& c : collective_names()) known |= c == o.collective;
    if (!known) {
      throw_error(StatusCode::kInvalidArgument, "--collective '" + o.collective +
                                                    "' unknown (all_reduce, all_gather, "
                                                    "reduce_scatter, broadcast, reduce, "
                                                    "all_to_all, send_recv, all)");
    }
  }
  check_comm_dtype(parse_dtype(o.dtype), "--dtype");
  // Whole elements only: a size would otherwise be rounded down silently.
  const auto require_whole_elements = [&](uint64_t bytes, const std::string& what) {
    const uint64_t element = dtype_size(parse_dtype(o.dtype));
    if (bytes % element != 0)
      throw_error(StatusCode::kInvalidArgument, what + std::to_string(bytes) +
                                                    " is not a multiple of " + o.dtype + "'s " +
                                                    std::to_string(element) + " bytes");
  };
  require_whole_elements(o.offset_bytes, "--offset ");
  for (const uint64_t size : o.sizes) require_whole_elements(size, "--sizes: ");
  parse_reduce_op(o.op);
  if (!o.path.empty() && o.path != "auto" && o.path != "host" && o.path != "hierarchical" &&
      o.path != "gdr")
    throw_error(StatusCode::kInvalidArgument,
                "--path '" + o.path + "' unknown (auto, host, hierarchical, gdr)");
  if (o.np) {
    check_root(o, *o.np);
    check_host_memory(o, *o.np);
    // Rank 0 writes it at the end (here, on this host): a run is not spent
    // to learn that it cannot be written.
    if (!o.json_path.empty()) check_file_destination("--json", o.json_path, "the results file");
    // Every named device exists, so no rank starts only to fail alone.
    const auto specs =
        o.devices.empty() ? std::vector<std::string>{} : rank_device_list(o.devices, "--devices");
    for (const std::string& spec : specs) {
      try {
        Runtime::global().device(spec);
      } catch (const Error& e) {
        throw Error(StatusCode::kInvalidArgument, "--devices: " + e.message());
      }
    }
  }
}

}  // namespace

uint64_t parse_size(const std::string& text, const char* option) {
  const auto refuse = [&](const std::string& why) {
    throw_error(StatusCode::kInvalidArgument, std::string(option) + ": '" + text + "' " + why);
  };
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [unit_start, ec] = std::from_chars(text.data(), end, v);  // digits only: no sign
  if (ec == std::errc::result_out_of_range) refuse("is too large");
  if (ec != std::errc()) refuse("is not a size (e.g. 8, 64K, 64M, 1G)");
  const std::string unit(unit_start, end);
  uint64_t scale = 1;
  if (unit == "K" || unit == "k")
    scale = 1ull << 10;
  else if (unit == "M" || unit == "m")
    scale = 1ull << 20;
  else if (unit == "G" || unit == "g")
    scale = 1ull << 30;
  else if (!unit.empty())
    throw_error(StatusCode::kInvalidArgument,
                std::string(option) + ": unknown unit '" + unit + "' in '" + text + "' (K, M, G)");
  if (v > std::numeric_limits<uint64_t>::max() / scale) refuse("is too large");
  return v * scale;
}

std::vector<uint64_t> parse_size_list(const std::string& text, const char* option) {
  std::vector<uint64_t> sizes;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    sizes.push_back(parse_size(text.substr(start, comma - start), option));
    start = comma + 1;
  }
  return sizes;
}

int run_comm_perf(const PerfOptions& o) {
  const bool local_child = std::getenv("POLYCHIP_COMM_LOCAL_CHILD") != nullptr;
  if (!local_child) {
    try {
      validate(o);
    } catch (const Error& e) {
      std::fprintf(stderr, "polychip comm-perf: %s\n", e.message().c_str());
      return kPerfExitUsage;
    }
  }
  // Before the launcher: its ranks inherit it.
  if (!o.path.empty()) ::setenv("POLYCHIP_COMM_PATH", o.path.c_str(), 1);
  if (o.np && !local_child) {
    LocalLaunch launch;
    launch.np = *o.np;
    launch.argv = own_command_line();
    // The ranks do no BLAS work, but OpenBLAS starts a thread per core in
    // every process, which spins ~0.1-0.2 s before sleeping: on the cores
    // the timed loops need (short 8-byte latency runs here measured 2.5-3.4
    // us with it, ~2 us without, before the mailboxes).
    if (!std::getenv("OPENBLAS_NUM_THREADS")) launch.extra_env["OPENBLAS_NUM_THREADS"] = "1";
    return launch_local(launch);
  }
  return run_rank_named(o);
}

}  // namespace polychip::comm
