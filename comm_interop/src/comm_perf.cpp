#include "polychip/comm/comm_perf.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "polychip/comm/case_runner.hpp"
#include "polychip/comm/communicator.hpp"
#include "polychip/comm/local_launcher.hpp"
#include "polychip/error.hpp"
#include "polychip/runtime.hpp"

namespace polychip::comm {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int run_rank(const PerfOptions& o) {
  CommConfig config = CommConfig::from_environment();
  std::optional<Device> device;
  if (!o.devices.empty()) {
    LaunchInfo launch = detect_launch();
    auto specs = split(o.devices);
    device = Runtime::global().device(specs[launch.rank % specs.size()]);
    config.device_type = device->device_type();
    config.vendor = device->adapter_name();
  }
  auto comm = Communicator::from_environment(config);
  const int n = comm->size();
  const bool lead = comm->rank() == 0;
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
      std::printf("# polychip comm-perf: %s, %d ranks, dtype %s, op %s, devices %s\n", c.c_str(), n,
                  o.dtype.c_str(), o.op.c_str(), o.devices.empty() ? "host" : o.devices.c_str());
      std::printf("#%11s %12s %8s %6s %6s  %9s %8s %8s %6s  %9s %8s %8s %6s  %s\n", "size", "count",
                  "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                  "busbw", "#wrong", "algo/path/transport");
      std::printf("#%11s %12s %8s %6s %6s  %9s %8s %8s %6s  %9s %8s %8s %6s\n", "(B)", "(elements)",
                  "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    }
    uint64_t previous_bytes = UINT64_MAX;
    for (uint64_t size = o.min_bytes;;
         size = std::min(o.max_bytes, std::max<uint64_t>(size * o.step_factor, size + 1))) {
      uint64_t bytes = runner.round_size(c, dtype, size);
      if (bytes == previous_bytes) {
        if (size >= o.max_bytes) break;
        continue;  // sizes that round to the same case run once
      }
      previous_bytes = bytes;
      nlohmann::json row;
      double times[2];
      uint64_t wrong[2];
      CaseResult results[2];
      for (int in_place = 0; in_place < 2; ++in_place) {
        CaseSpec spec{c, dtype, op, bytes, o.root, in_place == 1};
        results[in_place] = runner.run(spec, o.warmup, o.iterations);
        // Slowest rank's time and everyone's wrong count, as nccl-tests reports.
        double t = results[in_place].seconds, t_max = 0;
        int64_t w = static_cast<int64_t>(results[in_place].wrong), w_sum = 0;
        comm->all_reduce(&t, &t_max, 1, DType::kF64, ReduceOp::kMax);
        comm->all_reduce(&w, &w_sum, 1, DType::kI64, ReduceOp::kSum);
        times[in_place] = t_max;
        wrong[in_place] = static_cast<uint64_t>(w_sum);
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
        std::printf(
            "%12llu %12llu %8s %6s %6d  %9.1f %8.3f %8.3f %6llu  %9.1f %8.3f %8.3f %6llu  %s\n",
            (unsigned long long)bytes, (unsigned long long)results[0].count, o.dtype.c_str(),
            o.op.c_str(), o.root, times[0] * 1e6, algbw(times[0]), algbw(times[0]) * factor,
            (unsigned long long)wrong[0], times[1] * 1e6, algbw(times[1]), algbw(times[1]) * factor,
            (unsigned long long)wrong[1], how.c_str());
        std::fflush(stdout);
        nlohmann::json r;
        r["collective"] = c;
        r["size"] = bytes;
        r["count"] = results[0].count;
        r["type"] = o.dtype;
        r["redop"] = o.op;
        r["root"] = o.root;
        for (int k = 0; k < 2; ++k) {
          nlohmann::json m;
          m["time_us"] = times[k] * 1e6;
          m["algbw_gbps"] = algbw(times[k]);
          m["busbw_gbps"] = algbw(times[k]) * factor;
          m["wrong"] = wrong[k];
          r[k == 0 ? "out_of_place" : "in_place"] = m;
        }
        r["algorithm"] = std::string(algorithm_name(rec.algorithm));
        r["path"] = std::string(data_path_name(rec.path));
        r["transport"] = rec.transport;
        doc["results"].push_back(r);
      }
      if (size >= o.max_bytes) break;
    }
  }
  if (lead) {
    std::printf("# Out of bounds values : %llu %s\n", (unsigned long long)wrong_total,
                wrong_total ? "FAILED" : "OK");
    doc["wrong_total"] = wrong_total;
    if (!o.json_path.empty()) {
      std::ofstream f(o.json_path);
      f << doc.dump(2) << "\n";
      if (!f) throw_error(StatusCode::kUnavailable, "cannot write --json file " + o.json_path);
    }
  }
  return wrong_total ? 1 : 0;
}

}  // namespace

uint64_t parse_size(const std::string& text, const char* option) {
  size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos);
  } catch (const std::exception&) {
    throw_error(StatusCode::kInvalidArgument,
                std::string(option) + ": '" + text + "' is not a size (e.g. 8, 64K, 64M, 1G)");
  }
  std::string unit = text.substr(pos);
  uint64_t scale = 1;
  if (unit == "K" || unit == "k")
    scale = 1ull << 10;
  else if (unit == "M" || unit == "m")
    scale = 1ull << 20;
  else if (unit == "G" || unit == "g")
    scale = 1ull << 30;
  else if (!unit.empty()) {
    throw_error(StatusCode::kInvalidArgument,
                std::string(option) + ": unknown unit '" + unit + "' in '" + text + "' (K, M, G)");
  }
  return v * scale;
}

int run_comm_perf(const PerfOptions& o) {
  if (o.min_bytes > o.max_bytes) {
    throw_error(StatusCode::kInvalidArgument, "--min-bytes is larger than --max-bytes");
  }
  if (!(o.step_factor > 1)) throw_error(StatusCode::kInvalidArgument, "--step-factor must be > 1");
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
  if (o.np > 0 && !std::getenv("POLYCHIP_COMM_LOCAL_CHILD")) {
    LocalLaunch launch;
    launch.np = o.np;
    launch.argv = own_command_line();
    return launch_local(launch);
  }
  return run_rank(o);
}

}  // namespace polychip::comm
