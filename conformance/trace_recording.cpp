#include "trace_recording.hpp"

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "polychip/error.hpp"

namespace polychip::conformance {
namespace {

// The version in the driver's "NVRM version: NVIDIA UNIX ... Kernel Module
// for x86_64  580.159.04  Release Build ..." line; "" without one.
std::string nvidia_driver_version() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(f, line)) return "";
  std::istringstream words(line);
  for (std::string w; words >> w;) {
    const bool version = !w.empty() && w.find('.') != std::string::npos &&
                         w.find_first_not_of("0123456789.") == std::string::npos;
    if (version) return w;
  }
  return "";
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

reference::TraceKey trace_key(const precision::CaseSpec& spec) {
  return {spec.op, spec.dtype, spec.dims, spec.seed, spec.variant_string()};
}

nlohmann::json device_outputs_json(const precision::CaseSpec& spec,
                                   std::vector<precision::HostTensor> outputs) {
  return reference::trace_record_to_json({trace_key(spec), std::move(outputs)});
}

reference::TraceProvenance recording_provenance(const AdapterRun& run,
                                                const std::string& polychip_version) {
  const nlohmann::json& info = run.info;
  return {fmt::format("{} ({})", info.value("device_name", "?"), info.value("device_type", "?")),
          nvidia_driver_version(), "",
          fmt::format("polychip {}, {} adapter {}", polychip_version, info.value("adapter", "?"),
                      info.value("version", "?")),
          utc_now()};
}

reference::TraceStore recorded_trace(const AdapterRun& run, const std::string& polychip_version) {
  reference::TraceStore store(recording_provenance(run, polychip_version));
  for (size_t i = 0; i < run.device_outputs.size(); ++i)
    if (!run.device_outputs[i].is_null())
      store.add(reference::trace_record_from_json(run.device_outputs[i],
                                                  fmt::format("case {} from the worker", i)));
  return store;
}

}  // namespace polychip::conformance
