#include "comm_certify.hpp"

#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "atomic_file.hpp"
#include "polychip/error.hpp"
#include "polychip/hal.hpp"
#include "results.hpp"

namespace polychip::conformance {
namespace {

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

std::string verdict_of(const comm::CommCaseRecord& r) {
  if (r.verdict == "pass") return "Pass";
  if (r.error.find("timed out") != std::string::npos) return "Timeout";
  return "Fail";  // wrong bits, or the run failed (the message says which)
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
  const std::string mix = join(o.adapters, "+");
  nlohmann::json cases = nlohmann::json::array();
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& r : records) {
    const std::string verdict = verdict_of(r);
    const std::string types = join(r.device_types, "+");
    nlohmann::json c;
    c["id"] = fmt::format("{}/{}/{}/{}B/{}/{}", r.collective, r.dtype, r.op, r.bytes,
                          types.empty() ? mix : types, r.transport);
    c["suite"] = "comm";
    c["adapter"] = mix;
    c["op"] = r.collective;
    c["dtype"] = r.dtype;
    c["verdict"] = verdict;
    c["metrics"] = {{"bytes", r.bytes},
                    {"wrong", r.wrong},
                    {"redop", r.op},
                    {"algorithm", r.algorithm},
                    {"path", r.path},
                    {"transport", r.transport},
                    {"device_types", r.device_types}};
    c["tolerance"] = {{"wrong", 0},
                      {"rule", "bitwise identical and exactly expected on every rank"}};
    c["repro"] = fmt::format(
        "{}polychip comm-perf --np {} --devices {} -c {} -d {} -o {} -b {} -e {}",
        r.transport.rfind("tcp", 0) == 0 ? "POLYCHIP_COMM_TRANSPORT=tcp " : "", o.adapters.size(),
        join(o.adapters, ","), r.collective, r.dtype, r.op, r.bytes, r.bytes);
    c["message"] = verdict == "Pass" ? std::string("bitwise identical on every rank")
                   : r.error.empty() ? fmt::format("{} wrong elements", r.wrong)
                                     : r.error;
    summary[verdict] = summary.value(verdict, 0) + 1;
    cases.push_back(std::move(c));
  }
  const bool pass =
      !records.empty() && summary.value("Pass", 0) == static_cast<int>(records.size());
  nlohmann::json doc;
  doc["schema"] = kResultsSchema;
  doc["suite"] = "comm";
  doc["level"] = o.level;
  doc["environment"] = environment_json();
  doc["duration_seconds"] = duration_seconds;
  // The mix as one "adapter" entry, with what each rank ran on.
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
  doc["adapters"] = nlohmann::json::array(
      {{{"name", mix},
        {"ranks", ranks},
        {"device_type", join(types, "+")},
        {"version", join(versions, ", ")},
        {"abi", fmt::format("{}.{}", POLYCHIP_ABI_VERSION_MAJOR, POLYCHIP_ABI_VERSION_MINOR)},
        {"patches", patches},
        {"summary", summary},
        {"verdict", pass ? "Pass" : "Fail"}}});
  if (records.empty()) doc["adapters"][0]["error"] = "the suite produced no cases";
  doc["cases"] = std::move(cases);
  doc["summary"] = summary;
  doc["verdict"] = pass ? "Pass" : "Fail";
  return doc;
}

int run_comm_certify(const CertifyOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (o.adapters.size() < 2) {
    fmt::print(stderr,
               "polychip certify: --suite comm needs at least two --adapters entries (one rank "
               "each), e.g. cpu,sim.faithful,opencl\n");
    return 2;
  }
  if (o.out_dir.empty()) {
    fmt::print(stderr, "polychip certify: --out DIR is required\n");
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) {
    fmt::print(stderr, "polychip certify: cannot create --out '{}': {}\n", o.out_dir, ec.message());
    return 2;
  }
  comm::CommSuiteOptions s;
  s.devices = o.adapters;
  s.max_bytes = comm_max_bytes(o.level);
  s.timeout_seconds = o.timeout_seconds;
  s.work_dir = o.out_dir;
  s.polychip_executable = o.worker_executable;
  if (o.progress)
    fmt::print(stderr, "certify: comm across {} ranks ({}), messages up to {} bytes\n",
               o.adapters.size(), join(o.adapters, ", "), s.max_bytes);
  std::vector<comm::CommCaseRecord> records;
  try {
    records = comm::run_comm_suite(s);
  } catch (const Error& e) {
    fmt::print(stderr, "polychip certify: {}\n", e.message());
    return 3;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json results = build_comm_results(o, records, seconds);
  const std::filesystem::path dir(o.out_dir);
  try {
    write_file_atomically((dir / "results.json").string(), results.dump(2) + "\n");
    write_file_atomically((dir / "junit.xml").string(), junit_xml(results));
  } catch (const Error& e) {
    fmt::print(stderr, "polychip certify: {}\n", e.message());
    return 3;
  }
  fmt::print("{}", summary_table(results));
  fmt::print("results: {}  junit: {}  ({:.1f} s)\n", (dir / "results.json").string(),
             (dir / "junit.xml").string(), seconds);
  return results["verdict"] == "Pass" ? 0 : 1;
}

}  // namespace polychip::conformance
