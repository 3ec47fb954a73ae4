#include "reference/trace_store.hpp"

#include <array>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "polychip/atomic_file.hpp"
#include "polychip/case_key.hpp"
#include "polychip/op_contract.hpp"
#include "polychip/tensor.hpp"

namespace polychip::reference {
namespace {

using nlohmann::json;

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(const std::vector<uint8_t>& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t chunk = static_cast<uint32_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) chunk |= static_cast<uint32_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) chunk |= bytes[i + 2];
    out += kBase64[(chunk >> 18) & 63];
    out += kBase64[(chunk >> 12) & 63];
    out += i + 1 < bytes.size() ? kBase64[(chunk >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kBase64[chunk & 63] : '=';
  }
  return out;
}

// Returns false on a character outside the alphabet or a bad length.
bool base64_decode(const std::string& text, std::vector<uint8_t>& bytes) {
  std::array<int, 256> value;
  value.fill(-1);
  for (int k = 0; k < 64; ++k) value[static_cast<uint8_t>(kBase64[k])] = k;
  if (text.size() % 4) return false;
  bytes.clear();
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t chunk = 0;
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char ch = text[i + k];
      int v = 0;
      if (ch == '=' && i + 4 == text.size() && k >= 2) {
        ++pad;
      } else {
        if (pad) return false;
        v = value[static_cast<uint8_t>(ch)];
        if (v < 0) return false;
      }
      chunk = (chunk << 6) | static_cast<uint32_t>(v);
    }
    bytes.push_back(static_cast<uint8_t>(chunk >> 16));
    if (pad < 2) bytes.push_back(static_cast<uint8_t>(chunk >> 8));
    if (pad < 1) bytes.push_back(static_cast<uint8_t>(chunk));
  }
  return true;
}

uint64_t fnv1a64(const std::vector<uint8_t>& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::vector<uint8_t> to_bytes(const precision::HostTensor& t) {
  const size_t es = dtype_size(t.dtype);
  std::vector<uint8_t> bytes(t.values.size() * es);
  for (size_t k = 0; k < t.values.size(); ++k)
    store_from_f64(t.values[k], bytes.data() + k * es, t.dtype);
  return bytes;
}

[[noreturn]] void corrupt(const std::filesystem::path& path, const std::string& what) {
  throw_error(StatusCode::kDataCorruption, fmt::format("trace file {}: {}", path.string(), what));
}

}  // namespace

std::string TraceKey::to_string() const { return case_key(op, dtype, dims, variant, seed); }

std::string TraceProvenance::to_string() const {
  return fmt::format("recorded on {} (driver {}, CUDA {}, {}, {})",
                     device.empty() ? "an unnamed NVIDIA device" : device,
                     driver.empty() ? "?" : driver, cuda.empty() ? "?" : cuda,
                     software.empty() ? "unknown software" : software,
                     recorded_at.empty() ? "undated" : recorded_at);
}

TraceStore::TraceStore(TraceProvenance provenance) : provenance_(std::move(provenance)) {}

void TraceStore::add(TraceRecord record) {
  for (const auto& out : record.outputs)
    if (static_cast<int64_t>(out.values.size()) != precision::host_element_count(out.shape))
      throw_error(StatusCode::kInvalidArgument,
                  fmt::format("trace record {}: an output holds {} values for {} elements",
                              record.key.to_string(), out.values.size(),
                              precision::host_element_count(out.shape)));
  std::string key = record.key.to_string();
  auto it = index_.find(key);
  if (it != index_.end()) {
    records_[it->second] = std::move(record);
    return;
  }
  index_.emplace(std::move(key), records_.size());
  records_.push_back(std::move(record));
}

const TraceRecord* TraceStore::find(const TraceKey& key) const {
  auto it = index_.find(key.to_string());
  return it == index_.end() ? nullptr : &records_[it->second];
}

json trace_record_to_json(const TraceRecord& record) {
  json outputs = json::array();
  for (const auto& out : record.outputs) {
    std::vector<uint8_t> bytes = to_bytes(out);
    outputs.push_back({{"dtype", dtype_name(out.dtype)},
                       {"shape", out.shape},
                       {"encoding", "base64-le"},
                       {"fnv1a64", fmt::format("{:016x}", fnv1a64(bytes))},
                       {"data", base64_encode(bytes)}});
  }
  return {{"key",
           {{"op", record.key.op},
            {"dtype", dtype_name(record.key.dtype)},
            {"dims", record.key.dims},
            {"seed", record.key.seed},
            {"variant", record.key.variant}}},
          {"id", record.key.to_string()},
          {"outputs", outputs}};
}

TraceRecord trace_record_from_json(const json& j, const std::string& where_given) {
  std::string where = where_given;
  try {
    const json& k = j.at("key");
    // (A seed of -1 read as an unsigned one is 2^64 - 1.)
    if (!k.at("seed").is_number_unsigned())
      throw_error(
          StatusCode::kDataCorruption,
          fmt::format("{}: the seed {} is not a whole number >= 0", where, k["seed"].dump()));
    TraceRecord record;
    record.key = {k.at("op").get<std::string>(), parse_dtype(k.at("dtype").get<std::string>()),
                  k.at("dims").get<Shape>(), k.at("seed").get<uint64_t>(),
                  k.at("variant").get<std::string>()};
    where = fmt::format("{} ({})", where_given, record.key.to_string());
    const auto refuse = [&](const std::string& what) {
      throw_error(StatusCode::kDataCorruption, fmt::format("{}: {}", where, what));
    };
    const OpSpec* op = find_op(record.key.op);
    if (!op) refuse(fmt::format("'{}' is not an op of the contract", record.key.op));
    if (j.contains("id") && j.at("id").get<std::string>() != record.key.to_string())
      refuse(fmt::format("its id '{}' is not its key's", j.at("id").get<std::string>()));
    size_t out_index = 0;
    for (const json& o : j.at("outputs")) {
      precision::HostTensor t{
          parse_dtype(o.at("dtype").get<std::string>()), o.at("shape").get<Shape>(), {}};
      auto bad = [&](const std::string& what) {
        throw_error(StatusCode::kDataCorruption,
                    fmt::format("{} output {}: {}", where, out_index, what));
      };
      if (o.at("encoding").get<std::string>() != "base64-le") bad("unknown encoding");
      std::vector<uint8_t> bytes;
      if (!base64_decode(o.at("data").get<std::string>(), bytes)) bad("data is not base64");
      const size_t es = dtype_size(t.dtype);
      size_t count = 0;
      try {  // refuses a negative dimension and a product that would wrap
        count = static_cast<size_t>(element_count(t.shape));
      } catch (const Error& e) {
        bad(e.message());
      }
      // (Compared by division: count * es could wrap.)
      if (bytes.size() % es != 0 || bytes.size() / es != count)
        bad(fmt::format("{} bytes for {} elements of {}", bytes.size(), count,
                        dtype_name(t.dtype)));
      if (fmt::format("{:016x}", fnv1a64(bytes)) != o.at("fnv1a64").get<std::string>())
        bad("checksum mismatch");
      t.values.resize(count);
      for (size_t e = 0; e < count; ++e) t.values[e] = load_as_f64(bytes.data() + e * es, t.dtype);
      record.outputs.push_back(std::move(t));
      ++out_index;
    }
    if (record.outputs.size() != op->num_outputs())
      refuse(fmt::format("{} outputs recorded; {} has {}", record.outputs.size(), op->name,
                         op->num_outputs()));
    return record;
  } catch (const json::exception& e) {
    throw_error(StatusCode::kDataCorruption,
                fmt::format("{}: missing or mistyped field ({})", where, e.what()));
  } catch (const Error& e) {
    if (e.code() == StatusCode::kDataCorruption) throw;
    throw_error(StatusCode::kDataCorruption, fmt::format("{}: {}", where, e.message()));
  }
}

void TraceStore::write(const std::filesystem::path& path) const {
  json doc;
  doc["schema"] = kSchema;
  doc["provenance"] = {{"device", provenance_.device},
                       {"driver", provenance_.driver},
                       {"cuda", provenance_.cuda},
                       {"software", provenance_.software},
                       {"recorded_at", provenance_.recorded_at}};
  json records = json::array();
  for (const auto& r : records_) records.push_back(trace_record_to_json(r));
  doc["records"] = std::move(records);
  write_file_atomically(path.string(), doc.dump(1) + "\n");
}

TraceStore TraceStore::read(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw_error(StatusCode::kNotFound,
                fmt::format("trace file {} cannot be opened", path.string()));
  json doc;
  try {
    doc = json::parse(f);
  } catch (const json::exception& e) {
    corrupt(path, fmt::format("not valid JSON ({})", e.what()));
  }
  bool schema_ok = false;
  try {
    schema_ok = doc.is_object() && doc.value("schema", "") == kSchema;
  } catch (const json::exception&) {
  }
  if (!schema_ok) corrupt(path, fmt::format("schema is not \"{}\"", kSchema));
  try {
    const json& p = doc.at("provenance");
    TraceStore store({p.at("device").get<std::string>(), p.at("driver").get<std::string>(),
                      p.at("cuda").get<std::string>(), p.at("software").get<std::string>(),
                      p.at("recorded_at").get<std::string>()});
    size_t index = 0;
    for (const json& r : doc.at("records")) {
      TraceRecord record = trace_record_from_json(r, fmt::format("record {}", index));
      // Two records of one case: which one a certification used would
      // depend on the order, so the file is refused.
      if (store.find(record.key))
        throw_error(StatusCode::kDataCorruption,
                    fmt::format("record {} repeats case {}", index, record.key.to_string()));
      store.add(std::move(record));
      ++index;
    }
    return store;
  } catch (const json::exception& e) {
    corrupt(path, fmt::format("missing or mistyped field ({})", e.what()));
  } catch (const Error& e) {
    corrupt(path, e.message());
  }
}

}  // namespace polychip::reference
