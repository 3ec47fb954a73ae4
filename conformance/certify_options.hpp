// Options of `polychip certify` and of its hidden worker subcommand.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace polychip::conformance {

// Where results go when --out is not given (certify says so).
inline constexpr const char* kDefaultOutDir = "certify-results";

struct CertifyOptions {
  std::string suite = "precision";
  std::string level = "quick";
  // Adapter names (every device), device types or `adapter:N` (one device).
  std::vector<std::string> adapters;
  std::string out_dir;                 // "" = kDefaultOutDir
  std::string profile;                 // certification profile; "" = the data file's default
  std::optional<std::string> case_id;  // run exactly this case
  std::vector<std::string> ops;        // run only these ops' cases (a partial run)
  double timeout_seconds = 60;         // per case
  bool timeout_given = false;          // --timeout given (comm: else POLYCHIP_COMM_TIMEOUT)
  std::string tolerances_path;         // "" = built-in
  std::string waivers_path;            // "" = built-in
  std::string worker_executable;       // "" = this executable (/proc/self/exe)
  bool progress = true;                // progress lines on stderr
  bool coverage = false;               // print the level's coverage table, run nothing
  // --suite training: the reference trace ("" = the shipped one) and the tier.
  std::string reference_path;
  std::string tier = "cross-vendor";
  // --suite precision: record the device's outputs of every clean case as a
  // reference trace (schema polychip.nvidia_trace/1) in this file.
  std::string record_trace_path;
  // --suite precision: outputs recorded on NVIDIA hardware (a trace file)
  // replace the NVIDIA emulation for the cases the trace holds.
  std::string nvidia_trace_path;
};

struct WorkerOptions {
  std::string adapter;
  std::string level = "quick";
  std::optional<std::string> case_id;
  std::vector<std::string> ops;  // CertifyOptions::ops
  size_t first = 0;              // index of the first case to run
  int result_fd = 3;             // JSON lines go here
  std::string tolerances_path;
  std::string waivers_path;
  bool keep_device_outputs = false;  // send each case's outputs with its record
  std::string nvidia_trace_path;     // CertifyOptions::nvidia_trace_path
};

}  // namespace polychip::conformance
