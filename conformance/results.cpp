#include "results.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "polychip/error.hpp"
#include "results_folder.hpp"
#include "verdict.hpp"

#ifndef POLYCHIP_VERSION
#define POLYCHIP_VERSION "unknown"
#endif
#ifndef POLYCHIP_GIT_COMMIT
#define POLYCHIP_GIT_COMMIT ""
#endif

namespace polychip::conformance {
namespace {

using precision::Verdict;

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  return "unknown";
}

nlohmann::json count_verdicts(const std::vector<nlohmann::json>& records) {
  nlohmann::json counts = nlohmann::json::object();
  for (Verdict v : precision::kAllVerdicts) counts[std::string(precision::verdict_name(v))] = 0;
  for (const auto& r : records) {
    std::string v = r.value("verdict", "Fail");
    counts[v] = counts.value(v, 0) + 1;
  }
  return counts;
}

bool any_failure(const nlohmann::json& counts) {
  for (Verdict v : {Verdict::kFail, Verdict::kCrash, Verdict::kTimeout})
    if (counts.value(std::string(precision::verdict_name(v)), 0) > 0) return true;
  return false;
}

// How many of an adapter's cases `waiver` turned into Waived (a record
// carries the entry that waived it).
int waived_by(const std::vector<nlohmann::json>& records, const precision::Waiver& waiver) {
  const nlohmann::json entry = precision::to_json(waiver);
  int n = 0;
  for (const auto& r : records)
    n += r.value("verdict", "") == "Waived" && r.value("waiver", nlohmann::json()) == entry;
  return n;
}

// The summary's line for an adapter's partially supported pairs.
std::string partial_support_line(const nlohmann::json& pairs, const std::string& profile) {
  std::vector<std::string> named;
  for (const auto& p : pairs)
    named.push_back(fmt::format(
        "{} {} ({} of {} cases NotSupported{})", p.value("op", ""), p.value("dtype", ""),
        p.value("not_supported", 0), p.value("cases", 0),
        p.value("required", false) ? fmt::format("; required by profile {}: Fail", profile) : ""));
  return fmt::format("  partial support (NotSupported for some cases, run for others): {}\n",
                     fmt::join(named, ", "));
}

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 forbids most control characters.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r')
          out += '?';
        else
          out += c;
    }
  }
  return out;
}

// JUnit consumers (Jenkins) split a classname at its dots into packages:
// only the one dot between adapter and op may remain.
std::string junit_identifier(std::string_view s) {
  std::string out;
  for (char c : s)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return out;
}

}  // namespace

nlohmann::json environment_json() {
  char host[256] = "unknown";
  ::gethostname(host, sizeof host - 1);
  utsname u{};
  std::string os = "unknown";
  if (::uname(&u) == 0) os = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  nlohmann::json env = {{"host", host},
                        {"os", os},
                        {"cpu", cpu_model()},
                        {"cpu_count", static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))},
                        {"polychip_version", POLYCHIP_VERSION},
                        {"time", utc_now()}};
  std::string commit = POLYCHIP_GIT_COMMIT;
  env["git_commit"] = commit.empty() ? nlohmann::json(nullptr) : nlohmann::json(commit);
  return env;
}

nlohmann::json build_results(const CertifyOptions& o, const SuiteRun& suite,
                             double duration_seconds) {
  nlohmann::json doc;
  doc["schema"] = kResultsSchema;
  doc["environment"] = environment_json();
  nlohmann::json request = {{"suite", o.suite},
                            {"level", o.level},
                            {"adapters", o.adapters},
                            {"timeout_seconds", o.timeout_seconds}};
  if (o.case_id) request["case"] = *o.case_id;
  if (!o.ops.empty()) request["ops"] = o.ops;
  request["tolerances"] = o.tolerances_path.empty() ? "built-in" : o.tolerances_path;
  request["waivers"] = o.waivers_path.empty() ? "built-in" : o.waivers_path;
  request.update(suite.run_fields);
  doc["run"] = request;
  doc["duration_seconds"] = duration_seconds;
  doc["references"] = suite.references;

  nlohmann::json adapters = nlohmann::json::array();
  nlohmann::json cases = nlohmann::json::array();
  nlohmann::json waiver_list = nlohmann::json::array();
  std::vector<nlohmann::json> all_records;
  bool all_pass = true;
  for (const auto& run : suite.adapters) {
    nlohmann::json a = run.info;
    a["name"] = run.name;
    a["worker_starts"] = run.worker_starts;
    a["duration_seconds"] = run.seconds;
    nlohmann::json counts = count_verdicts(run.records);
    a["summary"] = counts;
    bool pass = !any_failure(counts) && !run.fatal;
    if (run.fatal) a["error"] = *run.fatal;
    if (!run.missing_required.empty()) a["missing_required"] = run.missing_required;
    if (!run.partial_support.empty()) a["partial_support"] = run.partial_support;
    a["verdict"] = pass ? "Pass" : "Fail";
    all_pass = all_pass && pass;
    std::string device_type = run.info.value("device_type", "");
    for (const auto& w : suite.waivers.for_adapter(run.name, device_type)) {
      nlohmann::json wj = precision::to_json(w);
      wj["applies_to"] = run.name;
      wj["cases_waived"] = waived_by(run.records, w);
      waiver_list.push_back(wj);
    }
    adapters.push_back(a);
    for (const auto& r : run.records) {
      cases.push_back(r);
      all_records.push_back(r);
    }
  }
  doc["adapters"] = adapters;
  doc["waivers"] = waiver_list;
  doc["cases"] = cases;
  doc["summary"] = count_verdicts(all_records);
  doc["verdict"] = all_pass && !suite.adapters.empty() ? "Pass" : "Fail";
  doc["caveats"] = suite.caveats;
  doc["certified"] = doc["verdict"] == "Pass" && suite.caveats.empty();
  return doc;
}

std::string junit_xml(const nlohmann::json& results) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  const auto& summary = results["summary"];
  auto count = [&](const nlohmann::json& s, const char* v) { return s.value(v, 0); };
  out += fmt::format(
      "<testsuites name=\"polychip certify\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
      "skipped=\"{}\">\n",
      results["cases"].size(), count(summary, "Fail"),
      count(summary, "Crash") + count(summary, "Timeout"),
      count(summary, "NotSupported") + count(summary, "Waived"));
  for (const auto& a : results["adapters"]) {
    const std::string name = a.value("name", "");
    const auto& s = a["summary"];
    std::string body;
    int tests = 0;
    double time = 0;
    for (const auto& c : results["cases"]) {
      if (c.value("adapter", "") != name) continue;
      ++tests;
      double ms = c.value("duration_ms", 0.0);
      time += ms / 1000;
      const std::string verdict = c.value("verdict", "");
      const std::string message = c.value("message", verdict);
      body += fmt::format("    <testcase classname=\"{}.{}\" name=\"{}\" time=\"{:.6f}\">\n",
                          junit_identifier(name), junit_identifier(c.value("op", "")),
                          xml_escape(c.value("id", "")), ms / 1000);
      if (verdict == "Fail")
        body += fmt::format("      <failure message=\"{}\">repro: {}</failure>\n",
                            xml_escape(message), xml_escape(c.value("repro", "")));
      else if (verdict == "Crash" || verdict == "Timeout")
        body += fmt::format("      <error type=\"{}\" message=\"{}\">repro: {}</error>\n", verdict,
                            xml_escape(message), xml_escape(c.value("repro", "")));
      else if (verdict == "NotSupported" || verdict == "Waived")
        body += fmt::format("      <skipped message=\"{}: {}\"/>\n", verdict, xml_escape(message));
      else if (verdict == "QualityWarning" || verdict == "Mistrusted")
        body +=
            fmt::format("      <system-out>{}: {}</system-out>\n", verdict, xml_escape(message));
      body += "    </testcase>\n";
    }
    out += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
        "time=\"{:.3f}\">\n",
        xml_escape(name), tests, count(s, "Fail"), count(s, "Crash") + count(s, "Timeout"),
        count(s, "NotSupported") + count(s, "Waived"), time);
    out += body;
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

std::string summary_table(const nlohmann::json& results) {
  std::vector<std::string> columns = {"Pass",   "QualityWarning", "Mistrusted", "NotSupported",
                                      "Waived", "Fail",           "Crash",      "Timeout"};
  size_t name_width = 7;
  for (const auto& a : results["adapters"])
    name_width = std::max(name_width, a.value("name", "").size());
  std::string out = fmt::format("{:<{}}", "adapter", name_width);
  for (const auto& c : columns) out += fmt::format("  {:>{}}", c, c.size());
  out += "  verdict  time (s)\n";
  for (const auto& a : results["adapters"]) {
    out += fmt::format("{:<{}}", a.value("name", ""), name_width);
    for (const auto& c : columns)
      out += fmt::format("  {:>{}}", a["summary"].value(c, 0), c.size());
    out += fmt::format("  {:<7}  {:>8.1f}\n", a.value("verdict", ""),
                       a.value("duration_seconds", 0.0));
    if (a.contains("error")) out += fmt::format("  error: {}\n", a["error"].get<std::string>());
    if (a.contains("missing_required"))
      out += fmt::format("  missing required ops (profile {}): {}\n",
                         results["run"].value("profile", "?"),
                         fmt::join(a["missing_required"].get<std::vector<std::string>>(), ", "));
    if (a.contains("partial_support"))
      out += partial_support_line(a["partial_support"], results["run"].value("profile", "?"));
  }
  size_t shown = 0, hidden = 0;
  for (const auto& c : results["cases"]) {
    std::string v = c.value("verdict", "");
    if (v == "Pass" || v == "NotSupported") continue;
    if (shown++ == 0) out += "\nnot passing (verdict, reproducer, why):\n";
    if (shown > 40) {
      ++hidden;
      continue;
    }
    out += fmt::format("  {:<14} {}\n                 {}\n", v, c.value("repro", ""),
                       c.value("message", ""));
  }
  if (hidden) out += fmt::format("  ... and {} more in results.json\n", hidden);
  const nlohmann::json caveats = results.value("caveats", nlohmann::json::array());
  if (!caveats.empty()) {
    out += "\ncaveats (a verdict under them is not a polychip certification):\n";
    for (const auto& caveat : caveats) out += fmt::format("  - {}\n", caveat.get<std::string>());
  }
  out += fmt::format("\noverall: {}{}\n", results.value("verdict", ""),
                     caveats.empty() ? ""
                                     : fmt::format(" (with {} caveat{})", caveats.size(),
                                                   caveats.size() == 1 ? "" : "s"));
  return out;
}

int write_and_report(const CertifyOptions& o, const nlohmann::json& results) {
  const std::filesystem::path dir(o.out_dir);
  // The verdict first: it is shown whatever becomes of the files.
  fmt::print("{}", summary_table(results));
  try {
    // (A message that is not UTF-8, from an adapter, is written with U+FFFD
    // in its place rather than losing the results.)
    write_results_pair(o.out_dir,
                       results.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                       junit_xml(results));
  } catch (const Error& e) {
    const std::string earlier = earlier_results_note(o.out_dir);
    std::fflush(stdout);
    fmt::print(stderr,
               "polychip certify: the results of this run were not written: {}. {} holds no "
               "results.json or junit.xml of this run{}. The verdict above is this run's; make "
               "room or fix what the error names and run it again\n",
               e.message(), o.out_dir, earlier.empty() ? "" : "; " + earlier);
    return 3;
  }
  fmt::print("results: {}  junit: {}  ({:.1f} s)\n", (dir / kResultsFileName).string(),
             (dir / kJunitFileName).string(), results.value("duration_seconds", 0.0));
  return results["verdict"] == "Pass" ? 0 : 1;
}

}  // namespace polychip::conformance
