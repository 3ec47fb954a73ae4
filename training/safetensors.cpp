#include "safetensors.hpp"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "polychip/error.hpp"

namespace polychip::training {
namespace {

[[noreturn]] void corrupt(const std::string& what) {
  throw Error(StatusCode::kDataCorruption, "safetensors: " + what);
}

int64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64") return 8;
  if (dtype == "F32" || dtype == "I32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16") return 2;
  if (dtype == "U8" || dtype == "I8" || dtype == "BOOL") return 1;
  corrupt("unknown dtype '" + dtype + "'");
}

// nlohmann's get<> would read 2.5 as 2 and true as 1: every size in a header
// must be a whole number.
std::vector<uint64_t> whole_numbers(const nlohmann::json& list, const std::string& what) {
  if (!list.is_array()) corrupt(what + " is not a list");
  std::vector<uint64_t> out;
  for (const nlohmann::json& v : list) {
    if (!v.is_number_unsigned()) corrupt(what + " holds " + v.dump() + ", not a whole number");
    out.push_back(v.get<uint64_t>());
  }
  return out;
}

// dtype x shape in bytes: a shape past 2^63 - 1 elements or bytes (or, from
// a dimension past 2^63 - 1, negative) is a damaged header, not a tensor.
uint64_t tensor_bytes(const NamedTensor& t) {
  const int64_t element_bytes = dtype_bytes(t.dtype);
  int64_t count = 0;
  try {
    count = element_count(t.shape);
  } catch (const Error& e) {
    corrupt(t.name + ": " + e.message());
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(count, element_bytes, &bytes))
    corrupt(t.name + ": more than 2^63 - 1 bytes of " + t.dtype);
  return static_cast<uint64_t>(bytes);
}

}  // namespace

std::string encode_safetensors(const std::vector<NamedTensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    if (static_cast<int64_t>(t.bytes.size()) != element_count(t.shape) * dtype_bytes(t.dtype))
      throw Error(StatusCode::kInternal, "safetensors: " + t.name + " has the wrong byte count");
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t length = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
  out += json;
  for (const NamedTensor& t : tensors) out += t.bytes;
  return out;
}

SafetensorsFile decode_safetensors(std::string_view file) {
  if (file.size() < 8) corrupt("file shorter than its 8-byte header length");
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= static_cast<uint64_t>(static_cast<uint8_t>(file[i])) << (8 * i);
  if (length > file.size() - 8)
    corrupt("header length " + std::to_string(length) + " past the end");
  const nlohmann::json header =
      nlohmann::json::parse(file.substr(8, length), nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) corrupt("the header is not a JSON object");
  const std::string_view data = file.substr(8 + length);
  SafetensorsFile out;
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) corrupt("__metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) corrupt("__metadata__." + k + " is not a string");
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    try {
      const std::vector<uint64_t> dims = whole_numbers(entry.at("shape"), name + ": shape");
      NamedTensor t{
          name, entry.at("dtype").get<std::string>(), Shape(dims.begin(), dims.end()), {}};
      const auto offsets = whole_numbers(entry.at("data_offsets"), name + ": data_offsets");
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data.size())
        corrupt(name + ": data_offsets outside the data");
      if (offsets[1] - offsets[0] != tensor_bytes(t))
        corrupt(name + ": data_offsets disagree with dtype and shape");
      t.bytes = std::string(data.substr(offsets[0], offsets[1] - offsets[0]));
      ranges.push_back({offsets[0], offsets[1], out.tensors.size()});
      out.tensors.push_back(std::move(t));
    } catch (const nlohmann::json::exception& e) {
      corrupt(name + ": " + e.what());
    }
  }
  // An empty tensor may begin where another one does: it goes first, or the
  // other one's end would look like an overlap.
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  std::vector<NamedTensor> ordered;
  for (const Range& r : ranges) {
    if (r.begin != expected)
      corrupt("tensor data overlaps or leaves a gap at byte " + std::to_string(expected));
    expected = r.end;
    ordered.push_back(std::move(out.tensors[r.index]));
  }
  if (expected != data.size()) corrupt("trailing bytes after the last tensor");
  out.tensors = std::move(ordered);
  return out;
}

const NamedTensor& SafetensorsFile::at(std::string_view name) const {
  for (const NamedTensor& t : tensors)
    if (t.name == name) return t;
  throw Error(StatusCode::kNotFound, "safetensors: no tensor '" + std::string(name) + "'");
}

std::string f32_bytes(const std::vector<double>& values) {
  std::string out(values.size() * 4, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const float f = static_cast<float>(values[i]);
    std::memcpy(out.data() + 4 * i, &f, 4);
  }
  return out;
}

std::vector<double> f32_values(const NamedTensor& tensor) {
  if (tensor.dtype != "F32") corrupt(tensor.name + " is " + tensor.dtype + ", expected F32");
  std::vector<double> out(tensor.bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    float f;
    std::memcpy(&f, tensor.bytes.data() + 4 * i, 4);
    out[i] = f;
  }
  return out;
}

}  // namespace polychip::training
