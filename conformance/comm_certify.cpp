#include "comm_certify.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "polychip/comm/config.hpp"
#include "polychip/comm/local_launcher.hpp"
#include "polychip/error.hpp"
#include "polychip/hal.hpp"
#include "progress.hpp"
#include "results.hpp"
#include "results_folder.hpp"
#include "worker.hpp"

namespace polychip::conformance {
namespace {

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

// The link a case ran over, without the checksum suffix ("rdma+crc32c").
std::string link_of(const comm::CommCaseRecord& r) {
  const std::string t = r.transport;
  if (t.rfind("gdr:", 0) == 0) return "gdr";  // "gdr:<provider>", as "rdma" names no provider
  const size_t crc = t.find("+crc32c");
  return crc == std::string::npos ? t : t.substr(0, crc);
}

std::string transport_environment(const comm::CommCaseRecord& r) {
  const std::string link = link_of(r);
  if (link.rfind("tcp", 0) == 0) return comm::path_environment("tcp");
  if (link.rfind("gdr", 0) == 0) return comm::path_environment("gdr");
  if (link.find("rdma") != std::string::npos) return comm::path_environment("rdma");
  return "";
}

// "3 wrong elements", "8 bytes written outside the buffers", or both: a
// write before or after a buffer is named as such, not counted as elements.
std::string wrong_message(const comm::CommCaseRecord& r) {
  const uint64_t elements = r.wrong - r.outside;
  std::vector<std::string> parts;
  if (elements)
    parts.push_back(fmt::format("{} wrong element{}", elements, elements == 1 ? "" : "s"));
  if (r.outside)
    parts.push_back(
        fmt::format("{} byte{} written outside the buffers (the guard bytes before "
                    "and after each)",
                    r.outside, r.outside == 1 ? "" : "s"));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string verdict_of(const comm::CommCaseRecord& r) {
  if (r.verdict == "pass") return "Pass";
  if (r.error.find("timed out") != std::string::npos) return "Timeout";
  return "Fail";  // wrong bits, or the run failed (the message says which)
}

// A progress line's group: "f16 all_reduce prod over tcp: 40 cases".
std::string group_description(const comm::CommCaseGroup& g, size_t cases) {
  return fmt::format(
      "{} {} over {}{}: {} case{}", g.dtype,
      g.op == "sum" ? std::string("every collective") : "all_reduce " + g.op, g.transport,
      g.offset_bytes ? fmt::format(", buffers {} B into their allocations", g.offset_bytes) : "",
      cases, cases == 1 ? "" : "s");
}

// A progress line's first case that did not pass, its message's first line.
std::string failure_description(const comm::CommCaseRecord& r) {
  const std::string message = r.error.empty() ? wrong_message(r) : r.error;
  return fmt::format("{} {}B: {}", r.collective, r.bytes, message.substr(0, message.find('\n')));
}

}  // namespace

uint64_t comm_max_bytes(const std::string& level) {
  if (level == "quick") return 64ull << 10;
  if (level == "standard") return 4ull << 20;
  if (level == "full") return 64ull << 20;
  throw_error(StatusCode::kInvalidArgument, fmt::format("unknown level '{}'", level));
}

nlohmann::json build_comm_results(const CertifyOptions& o,
                                  const std::vector<comm::CommCaseRecord>& records,
                                  double duration_seconds) {
  // The mix is certified together: one `adapters[]` entry for it.
  AdapterRun mix;
  mix.name = join(o.adapters, "+");
  mix.worker_starts = 0;
  for (const auto& r : records) {
    const std::string verdict = verdict_of(r);
    const std::string types = join(r.device_types, "+");
    nlohmann::json c;
    c["id"] = fmt::format("{}/{}/{}/{}B/{}/{}{}", r.collective, r.dtype, r.op, r.bytes,
                          types.empty() ? mix.name : types, r.transport,
                          r.offset ? fmt::format("/offset={}B", r.offset) : "");
    c["suite"] = "comm";
    c["adapter"] = mix.name;
    c["op"] = r.collective;
    c["dtype"] = r.dtype;
    c["verdict"] = verdict;
    c["metrics"] = {{"bytes", r.bytes},
                    {"wrong", r.wrong},
                    {"outside_bytes", r.outside},
                    {"redop", r.op},
                    {"algorithm", r.algorithm},
                    {"path", r.path},
                    {"transport", r.transport},
                    {"offset", r.offset},
                    {"device_types", r.device_types}};
    c["tolerance"] = {{"wrong", 0},
                      {"rule", "bitwise identical and exactly expected on every rank"}};
    c["repro"] = fmt::format("{}{}{} comm-perf --np {} --devices {} -c {} -d {}{} --sizes {}{}",
                             repro_environment(), transport_environment(r), polychip_command(),
                             o.adapters.size(), join(o.adapters, ","), r.collective, r.dtype,
                             r.op == "none" ? "" : " -o " + r.op, r.bytes,
                             r.offset ? fmt::format(" --offset {}", r.offset) : "");
    c["message"] = verdict == "Pass" ? std::string("bitwise identical on every rank")
                   : r.error.empty() ? wrong_message(r)
                                     : r.error;
    c["duration_ms"] = r.seconds * 1000;
    mix.records.push_back(std::move(c));
  }
  // What each rank ran on.
  nlohmann::json ranks = nlohmann::json::array(), patches = nlohmann::json::array();
  std::vector<std::string> types, versions;
  Runtime& rt = Runtime::global();
  for (const auto& spec : o.adapters) {
    nlohmann::json rank = {{"spec", spec}};
    try {
      Device d = rt.device(spec);
      rank["device_type"] = d.device_type();
      rank["adapter"] = d.adapter_name();
      rank["version"] = d.api().adapter_version;
      types.push_back(d.device_type());
      versions.push_back(fmt::format("{} {}", d.adapter_name(), d.api().adapter_version));
    } catch (const Error& e) {
      rank["error"] = e.message();
    }
    ranks.push_back(std::move(rank));
  }
  for (const auto& p : rt.dispatcher().active_patches())
    patches.push_back({{"device_type", p.device_type}, {"op", p.op}, {"origin", p.origin}});
  mix.info = {{"ranks", ranks},
              {"device_type", join(types, "+")},
              {"version", join(versions, ", ")},
              {"abi", fmt::format("{}.{}", POLYCHIP_ABI_VERSION_MAJOR, POLYCHIP_ABI_VERSION_MINOR)},
              {"patches", patches}};
  if (records.empty()) mix.fatal = "the suite produced no cases";
  mix.seconds = duration_seconds;
  SuiteRun suite;
  suite.adapters.push_back(std::move(mix));
  suite.references = {{"expected", "exact values computed on the host for every rank"},
                      {"rule", "bitwise identical and exactly expected on every rank"}};
  // The interop matrix: per link that ran, per collective, cases passed of run.
  nlohmann::json paths = nlohmann::json::object();
  for (const auto& r : records) {
    nlohmann::json& cell = paths[link_of(r)][r.collective];
    if (cell.is_null()) cell = {{"pass", 0}, {"cases", 0}};
    cell["cases"] = cell["cases"].get<int>() + 1;
    if (r.verdict == "pass") cell["pass"] = cell["pass"].get<int>() + 1;
  }
  suite.run_fields = {{"max_bytes", comm_max_bytes(o.level)}, {"paths", paths}};
  return build_results(o, suite, duration_seconds);
}

int run_comm_certify(const CertifyOptions& given) {
  const auto start = std::chrono::steady_clock::now();
  CertifyOptions o = given;
  if (o.adapters.size() < 2) {
    fmt::print(stderr,
               "polychip certify: --suite comm needs at least two --adapters entries (one rank "
               "each), e.g. cpu,sim.faithful,opencl\n");
    return 2;
  }
  // (past it, every case group's launch was refused and the chips reported failing)
  if (o.adapters.size() > static_cast<size_t>(comm::kMaxLocalRanks)) {
    fmt::print(stderr,
               "polychip certify: --suite comm runs one local rank per --adapters entry, at most "
               "{}; got {}\n",
               comm::kMaxLocalRanks, o.adapters.size());
    return 2;
  }
  // The ranks read POLYCHIP_COMM_* as comm-perf does, which refuses a
  // malformed value: refused here once, not by every case group's ranks.
  // POLYCHIP_COMM_TIMEOUT is the ranks' deadline unless --timeout gives one.
  try {
    const comm::CommConfig config = comm::CommConfig::from_environment();
    const char* timeout = std::getenv("POLYCHIP_COMM_TIMEOUT");
    if (!o.timeout_given && timeout && *timeout) o.timeout_seconds = config.timeout_seconds;
  } catch (const Error& e) {
    fmt::print(stderr, "polychip certify: {}\n", e.message());
    return 2;
  }
  std::optional<RunInProgress> in_progress;
  try {
    in_progress.emplace(o.out_dir);
  } catch (const Error& e) {
    fmt::print(stderr, "polychip certify: {}\n", e.message());
    return 2;
  }
  comm::CommSuiteOptions s;
  s.devices = o.adapters;
  s.max_bytes = comm_max_bytes(o.level);
  s.timeout_seconds = o.timeout_seconds;
  s.work_dir = o.out_dir;
  s.polychip_executable = o.worker_executable;
  Progress progress(o.progress);
  s.progress = [&](const comm::CommCaseGroup& g, size_t index, size_t groups,
                   std::span<const comm::CommCaseRecord> records) {
    const auto failing = std::find_if(records.begin(), records.end(),
                                      [](const auto& r) { return r.verdict != "pass"; });
    progress.item("comm", index, groups, group_description(g, records.size()),
                  failing == records.end(),
                  failing == records.end() ? "" : failure_description(*failing));
  };
  progress.line(fmt::format(
      "certify: comm across {} ranks ({}), messages up to {} bytes, POLYCHIP_COMM_TIMEOUT {} s",
      o.adapters.size(), join(o.adapters, ", "), s.max_bytes, o.timeout_seconds));
  std::vector<comm::CommCaseRecord> records;
  try {
    records = comm::run_comm_suite(s);
  } catch (const Error& e) {
    progress.clear();
    fmt::print(stderr, "polychip certify: {}\n", e.message());
    return 3;
  }
  progress.clear();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nlohmann::json results = build_comm_results(o, records, seconds);
  // The matrix first: the summary table and the results path end the output.
  const nlohmann::json& paths = results["run"]["paths"];
  std::vector<std::string> collectives;
  for (const auto& [link, row] : paths.items())
    for (const auto& [collective, cell] : row.items())
      if (std::find(collectives.begin(), collectives.end(), collective) == collectives.end())
        collectives.push_back(collective);
  fmt::print("{:<10}", "link");
  for (const auto& c : collectives) fmt::print(" {:>15}", c);
  fmt::print("\n");
  for (const auto& [link, row] : paths.items()) {
    fmt::print("{:<10}", link);
    for (const auto& c : collectives) {
      const std::string cell = row.contains(c) ? fmt::format("{}/{}", row[c]["pass"].get<int>(),
                                                             row[c]["cases"].get<int>())
                                               : "-";
      fmt::print(" {:>15}", cell);
    }
    fmt::print("\n");
  }
  return write_and_report(o, results);
}

}  // namespace polychip::conformance
