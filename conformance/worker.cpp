#include "worker.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "case_list.hpp"
#include "case_runner.hpp"
#include "polychip/dispatcher.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/runtime.hpp"
#include "references.hpp"
#include "supervisor.hpp"
#if POLYCHIP_HAVE_NVIDIA_REFERENCE
#include "trace_recording.hpp"
#endif

namespace polychip::conformance {
namespace {

// Writes one line fully (retrying short writes) so the parent never sees
// half a record unless the process dies inside write().
void emit(int fd, const nlohmann::json& j) {
  std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(3);  // the parent is gone: nothing left to report to
    p += n;
    left -= static_cast<size_t>(n);
  }
}

nlohmann::json adapter_json(Runtime& runtime, const Device& device, const std::string& requested) {
  nlohmann::json j = {{"name", requested},
                      {"adapter", device.adapter_name()},
                      {"device", device.label()},
                      {"device_type", device.device_type()},
                      {"device_name", device.properties().name}};
  for (const auto& info : runtime.adapters())
    if (info.name == device.adapter_name()) {
      j["version"] = info.version;
      j["vendor"] = info.vendor;
      j["abi"] = fmt::format("{}.{}", info.abi_major, info.abi_minor);
      j["origin"] = info.origin;
    }
  nlohmann::json dtypes = nlohmann::json::array();
  for (DType d : device.properties().supported_dtypes) dtypes.push_back(dtype_name(d));
  j["supported_dtypes"] = dtypes;
  nlohmann::json patches = nlohmann::json::array();
  for (const auto& p : runtime.dispatcher().active_patches())
    if (p.device_type == device.device_type())
      patches.push_back({{"op", p.op}, {"signature", p.signature}, {"origin", p.origin}});
  j["patches"] = patches;
  return j;
}

// `s` as one shell word: as it is when that is safe, else single-quoted.
std::string shell_word(std::string_view s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || (c && std::strchr("/._-:+,=@%", c));
  });
  if (plain) return std::string(s);
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::vector<precision::CaseSpec> select_cases(const std::string& suite, const std::string& level,
                                              const std::optional<std::string>& case_id,
                                              const std::vector<std::string>& ops) {
  if (suite != "precision")
    throw_error(StatusCode::kInvalidArgument,
                fmt::format("unknown suite '{}' (available: precision)", suite));
  auto lvl = precision::parse_level(level);
  if (case_id && !ops.empty())
    throw_error(StatusCode::kInvalidArgument,
                "--case and --ops both choose the cases to run: give one of them");
  if (case_id) return {precision::parse_case_id(*case_id)};
  std::vector<precision::CaseSpec> cases = precision::cases_for_level(lvl);
  if (ops.empty()) return cases;
  std::set<std::string> wanted;
  for (const auto& op : ops) {
    if (!find_op(op)) {
      std::vector<std::string> names;
      for (const auto& entry : op_contract()) names.emplace_back(entry.name);
      throw_error(StatusCode::kInvalidArgument,
                  fmt::format("--ops: unknown op '{}' (the op contract's ops: {})", op,
                              fmt::join(names, ", ")));
    }
    wanted.insert(op);
  }
  std::erase_if(cases, [&](const precision::CaseSpec& c) { return !wanted.contains(c.op); });
  return cases;
}

std::string repro_environment() {
  std::string env;
  for (const char* name : {"POLYCHIP_ADAPTER_PATH", "POLYCHIP_ADAPTERS", "POLYCHIP_PATCHES",
                           "POLYCHIP_HOST_FALLBACK"}) {
    const char* value = std::getenv(name);
    if (value && *value) env += fmt::format("{}={} ", name, shell_word(value));
  }
  return env;
}

std::string polychip_command() { return shell_word(self_executable()); }

std::string repro_prefix(const std::string& adapter) {
  return fmt::format("{}{} certify --suite precision --adapters {} --case ", repro_environment(),
                     polychip_command(), shell_word(adapter));
}

int run_worker(const WorkerOptions& o) {
  const int fd = o.result_fd;
  try {
    auto cases = select_cases("precision", o.level, o.case_id, o.ops);
    Runtime& runtime = Runtime::global();
    Device device;
    try {
      device = runtime.device(o.adapter);
    } catch (const Error& e) {
      emit(fd, {{"event", "fatal"}, {"usage", true}, {"message", e.message()}});
      return 1;
    }
    auto tolerances = o.tolerances_path.empty()
                          ? precision::ToleranceTable::builtin()
                          : precision::ToleranceTable::from_file(o.tolerances_path);
    auto waivers = o.waivers_path.empty() ? precision::WaiverList::builtin()
                                          : precision::WaiverList::from_file(o.waivers_path);
    Stream stream(device);
    precision::CaseContext ctx;
    ctx.device = device;
    ctx.dispatcher = &runtime.dispatcher();
    ctx.stream = &stream;
    ctx.references = default_references(
        o.nvidia_trace_path.empty() ? nullptr : read_nvidia_trace(o.nvidia_trace_path));
    ctx.tolerances = &tolerances;
    ctx.waivers = &waivers;
    ctx.adapter = o.adapter;
    ctx.repro_prefix = repro_prefix(o.adapter);
    ctx.keep_device_outputs = o.keep_device_outputs;
    emit(fd, {{"event", "hello"},
              {"adapter", adapter_json(runtime, device, o.adapter)},
              {"cases", cases.size()}});
    for (size_t i = o.first; i < cases.size(); ++i) {
      emit(fd, {{"event", "begin"}, {"index", i}, {"id", precision::case_id(cases[i])}});
      auto outcome = precision::run_case(cases[i], ctx);
      nlohmann::json event = {{"event", "case"}, {"index", i}, {"record", outcome.record}};
#if POLYCHIP_HAVE_NVIDIA_REFERENCE
      if (!outcome.device_outputs.empty())
        event["device_outputs"] = device_outputs_json(cases[i], std::move(outcome.device_outputs));
#endif
      emit(fd, event);
    }
    emit(fd, {{"event", "done"}});
    return 0;
  } catch (const Error& e) {
    emit(fd,
         {{"event", "fatal"},
          {"usage", e.code() == StatusCode::kInvalidArgument || e.code() == StatusCode::kNotFound},
          {"message", e.what()}});
    return 1;
  } catch (const std::exception& e) {
    emit(fd, {{"event", "fatal"}, {"usage", false}, {"message", e.what()}});
    return 1;
  }
}

}  // namespace polychip::conformance
