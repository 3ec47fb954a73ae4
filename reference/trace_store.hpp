// TraceStore: outputs of ops recorded on real NVIDIA hardware, keyed by the
// case that produced them, so they can replace the emulation. One JSON file
// per store (schema "polychip.nvidia_trace/1", docs/reference-numerics.md):
// the recording's provenance, then one record per case with each output's
// dtype, shape and raw little-endian bytes in base64, plus an FNV-1a 64
// checksum of those bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "precision/host_tensor.hpp"

namespace polychip::reference {

// What identifies a case: the op, its compute dtype, its problem dims (the
// harness's case dims, e.g. M, N, K for gemm), the input seed, and the
// variant tokens ("tf32", "ta", "special", ...) joined by '+'.
struct TraceKey {
  std::string op;
  DType dtype = DType::kF32;
  Shape dims;
  uint64_t seed = 0;
  std::string variant;
  // case_key(): "gemm/f32/64x64x64/tf32/seed=7", the suite's case id.
  std::string to_string() const;
  bool operator==(const TraceKey&) const = default;
};

struct TraceProvenance {
  std::string device;       // e.g. "NVIDIA H100 80GB HBM3 (sm_90)"
  std::string driver;       // e.g. "580.65.06"
  std::string cuda;         // e.g. "13.0"
  std::string software;     // e.g. "polychip cuda adapter 0.1, cuBLAS 13.0"
  std::string recorded_at;  // ISO 8601
  // "recorded on <device> (driver ..., CUDA ..., <software>, <recorded_at>)"
  std::string to_string() const;
};

struct TraceRecord {
  TraceKey key;
  std::vector<precision::HostTensor> outputs;  // in contract order
};

// One record as a trace file holds it; a certify worker sends its supervisor
// the same JSON.
nlohmann::json trace_record_to_json(const TraceRecord& record);
// Throws Error(DATA_CORRUPTION) naming `where`, the record's id and the
// output for a missing or mistyped field, bad base64, a size or checksum
// mismatch.
TraceRecord trace_record_from_json(const nlohmann::json& record, const std::string& where);

class TraceStore {
 public:
  inline static const std::string kSchema = "polychip.nvidia_trace/1";

  explicit TraceStore(TraceProvenance provenance = {});

  // Adds a record, replacing any with the same key. Output values must be
  // representable in their dtypes (they are stored bit-exactly).
  void add(TraceRecord record);
  const TraceRecord* find(const TraceKey& key) const;
  size_t size() const { return records_.size(); }
  const TraceProvenance& provenance() const { return provenance_; }

  // Writes atomically (a temporary file renamed over `path`). Throws
  // Error(UNAVAILABLE) naming the path when it cannot be written.
  void write(const std::filesystem::path& path) const;
  // Throws Error(NOT_FOUND) for a missing file, Error(DATA_CORRUPTION)
  // naming the file and record for bad JSON, a wrong schema, a size or
  // checksum mismatch.
  static TraceStore read(const std::filesystem::path& path);

 private:
  TraceProvenance provenance_;
  std::vector<TraceRecord> records_;
  std::unordered_map<std::string, size_t> index_;  // key string -> record
};

}  // namespace polychip::reference
