#include "polychip/comm/conformance_suite.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "polychip/comm/config.hpp"

#include "polychip/comm/comm_perf.hpp"
#include "polychip/error.hpp"

namespace polychip::comm {
namespace {

struct ChildResult {
  int exit_code = -1;
  std::string output;
};

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

ChildResult run_command(const std::string& command) {
  ChildResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw_error(StatusCode::kInternal, "popen failed for: " + command);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

uint64_t element_size(const std::string& dtype) { return dtype_size(parse_dtype(dtype)); }

std::string size_list(const CommSuiteOptions& o, const std::string& dtype) {
  std::string list;
  for (uint64_t size :
       boundary_sizes(o.max_bytes, static_cast<int>(o.devices.size()), element_size(dtype)))
    list += (list.empty() ? "" : ",") + std::to_string(size);
  return list;
}

}  // namespace

std::string path_environment(const std::string& pass) {
  // "rdma" certifies H2D-RDMA alone: auto would take GDR where it can.
  if (pass == "rdma") return "POLYCHIP_COMM_TRANSPORT=rdma POLYCHIP_COMM_PATH=host ";
  if (pass == "gdr") return "POLYCHIP_COMM_TRANSPORT=rdma POLYCHIP_COMM_PATH=gdr ";
  return "POLYCHIP_COMM_TRANSPORT=" + shell_quote(pass) + " ";
}

namespace {

// One comm-perf child: every collective (op "sum") or the all-reduce alone
// for one dtype, op and transport; its records are appended to `records`.
// Returns false when the child refused its command line (an unknown device):
// every later group would be refused the same way.
bool run_group(const CommSuiteOptions& o, const std::string& exe, const std::string& device_list,
               const std::string& transport, const std::string& dtype, const std::string& op,
               uint64_t offset, int run_index, std::vector<CommCaseRecord>& records) {
  const bool all_collectives = op == "sum";
  std::string json = o.work_dir + "/polychip_comm_suite_" + std::to_string(::getpid()) + "_" +
                     std::to_string(run_index) + ".json";
  std::ostringstream cmd;
  cmd << "POLYCHIP_COMM_TIMEOUT=" << o.timeout_seconds << " " << path_environment(transport)
      << shell_quote(exe) << " comm-perf -c " << (all_collectives ? "all" : "all_reduce") << " -d "
      << dtype << " -o " << op << " --sizes " << size_list(o, dtype) << " --offset " << offset
      << " -w 0 -n 0 --devices " << shell_quote(device_list) << " --np " << o.devices.size()
      << " -J " << shell_quote(json);
  const auto started = std::chrono::steady_clock::now();
  ChildResult child = run_command(cmd.str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  nlohmann::json doc;
  bool parsed = false;
  {
    std::ifstream f(json);
    if (f) {
      try {
        f >> doc;
        parsed = true;
      } catch (const std::exception&) {
      }
    }
  }
  std::remove(json.c_str());
  if (!parsed || child.exit_code > 1) {
    CommCaseRecord rec;
    rec.collective = all_collectives ? "all" : "all_reduce";
    rec.dtype = dtype;
    rec.op = op;
    rec.offset = offset;
    rec.device_types = o.devices;
    rec.transport = transport;
    rec.verdict = "error";
    rec.error = "comm-perf exited with " + std::to_string(child.exit_code) + ": " +
                child.output.substr(child.output.size() > 2000 ? child.output.size() - 2000 : 0);
    rec.seconds = seconds;
    records.push_back(rec);
    return child.exit_code != kPerfExitUsage;
  }
  std::vector<std::string> types;
  for (auto& t : doc["device_types"]) types.push_back(t.get<std::string>());
  for (auto& r : doc["results"]) {
    CommCaseRecord rec;
    rec.collective = r["collective"].get<std::string>();
    rec.dtype = dtype;
    rec.op = r["redop"].get<std::string>();  // "none" for collectives that do not reduce
    rec.bytes = r["size"].get<uint64_t>();
    rec.offset = offset;
    rec.device_types = types;
    rec.algorithm = r["algorithm"].get<std::string>();
    rec.path = r["path"].get<std::string>();
    rec.transport = r["transport"].get<std::string>();
    rec.wrong = r["out_of_place"]["wrong"].get<uint64_t>() + r["in_place"]["wrong"].get<uint64_t>();
    rec.outside =
        r["out_of_place"]["outside"].get<uint64_t>() + r["in_place"]["outside"].get<uint64_t>();
    rec.verdict = rec.wrong == 0 ? "pass" : "fail";
    rec.seconds = seconds / static_cast<double>(doc["results"].size());
    records.push_back(rec);
  }
  return true;
}

}  // namespace

std::vector<uint64_t> boundary_sizes(uint64_t max_bytes, int ranks, uint64_t element_size) {
  const uint64_t w = element_size, n = static_cast<uint64_t>(std::max(ranks, 1));
  const CommConfig defaults;
  std::set<uint64_t> sizes = {0, w, (2 * n + 1) * w};
  for (uint64_t boundary : {uint64_t{4096}, defaults.small_bytes, uint64_t{256} << 10,
                            defaults.chunk_bytes, defaults.shm_ring_bytes, uint64_t{64} << 20}) {
    if (boundary > max_bytes) continue;
    for (uint64_t size : {boundary - n * w, boundary - w, boundary, boundary + w, boundary + n * w})
      sizes.insert(size);
  }
  return {sizes.begin(), sizes.end()};
}

std::vector<CommCaseRecord> run_comm_suite(const CommSuiteOptions& o) {
  if (o.devices.empty()) throw_error(StatusCode::kInvalidArgument, "comm suite: no devices");
  // Resolved here: the children are started through a shell, for which
  // /proc/self/exe would be the shell itself.
  std::string exe = o.polychip_executable.empty()
                        ? std::filesystem::read_symlink("/proc/self/exe").string()
                        : o.polychip_executable;
  std::string device_list;
  for (const std::string& d : o.devices) device_list += (device_list.empty() ? "" : ",") + d;
  std::vector<CommCaseGroup> groups;
  for (const std::string& transport : o.transports)
    for (const std::string& dtype : o.dtypes)
      for (const std::string& op : o.ops)
        // GDR takes sums (and the collectives without an op); other ops are the rdma pass's.
        if (transport != "gdr" || op == "sum") groups.push_back({transport, dtype, op, 0});
  if (o.offset_elements > 0)
    for (const std::string& dtype : o.dtypes)
      groups.push_back({"auto", dtype, "sum", o.offset_elements * element_size(dtype)});
  std::vector<CommCaseRecord> records;
  for (size_t i = 0; i < groups.size(); ++i) {
    const CommCaseGroup& g = groups[i];
    const size_t first = records.size();
    const bool go_on = run_group(o, exe, device_list, g.transport, g.dtype, g.op, g.offset_bytes,
                                 static_cast<int>(i), records);
    if (o.progress) o.progress(g, i, groups.size(), std::span(records).subspan(first));
    if (!go_on) break;
  }
  return records;
}

}  // namespace polychip::comm
