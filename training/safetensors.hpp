// The safetensors file format (huggingface/safetensors): an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype,
// shape and [begin, end) byte range in the data that follows, and the raw
// little-endian data. Written by hand so the workload needs no Python.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "polychip/tensor.hpp"

namespace polychip::training {

struct NamedTensor {
  std::string name;
  std::string dtype;  // safetensors spelling: "F32", "F64", "I32"
  Shape shape;
  std::string bytes;  // raw little-endian data
};

// Tensors are laid out in the order given; the header is padded with spaces
// to a multiple of 8 bytes. metadata goes in "__metadata__" (strings only).
std::string encode_safetensors(const std::vector<NamedTensor>& tensors,
                               const std::map<std::string, std::string>& metadata);

struct SafetensorsFile {
  std::vector<NamedTensor> tensors;  // in data order
  std::map<std::string, std::string> metadata;
  const NamedTensor& at(std::string_view name) const;  // throws NOT_FOUND
};

// Throws DATA_CORRUPTION naming what is wrong (truncated, bad JSON, ranges
// that overlap, leave gaps or disagree with dtype x shape).
SafetensorsFile decode_safetensors(std::string_view file);

std::string f32_bytes(const std::vector<double>& values);
std::vector<double> f32_values(const NamedTensor& tensor);  // dtype must be F32

}  // namespace polychip::training
