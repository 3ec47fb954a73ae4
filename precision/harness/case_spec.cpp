#include "case_spec.hpp"

#include <charconv>

#include <fmt/format.h>

#include "polychip/case_key.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::precision {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

template <typename Int>
bool parse_int(std::string_view s, Int& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

[[noreturn]] void bad_id(std::string_view id, const std::string& why) {
  throw_error(StatusCode::kInvalidArgument,
              fmt::format("case id '{}': {} (expected <op>/<dtype>/<dims>[/<variant>]/seed=<n>, "
                          "e.g. gemm/f32/64x64x64/seed=7)",
                          id, why));
}

}  // namespace

bool CaseSpec::has(std::string_view token) const {
  for (const auto& t : variant)
    if (t == token) return true;
  return false;
}

std::string CaseSpec::value_of(std::string_view key) const {
  for (const auto& t : variant)
    if (t.size() > key.size() && t.compare(0, key.size(), key) == 0 && t[key.size()] == '=')
      return t.substr(key.size() + 1);
  return "";
}

std::string CaseSpec::variant_string() const {
  std::string joined;
  for (size_t k = 0; k < variant.size(); ++k) joined += (k ? "+" : "") + variant[k];
  return joined;
}

std::string case_id(const CaseSpec& spec) {
  return case_key(spec.op, spec.dtype, spec.dims, spec.variant_string(), spec.seed);
}

CaseSpec parse_case_id(std::string_view id) {
  auto parts = split(id, '/');
  if (parts.size() != 4 && parts.size() != 5) bad_id(id, "wrong number of '/'-separated parts");
  CaseSpec spec;
  spec.op = std::string(parts[0]);
  if (!find_op(spec.op)) bad_id(id, fmt::format("unknown op '{}'", spec.op));
  try {
    spec.dtype = parse_dtype(parts[1]);
  } catch (const Error& e) {
    bad_id(id, e.message());
  }
  if (parts[2] != "scalar") {
    for (auto d : split(parts[2], 'x')) {
      int64_t v = 0;
      if (!parse_int(d, v) || v < 0)
        bad_id(id, fmt::format("dimension '{}' is not a non-negative integer", d));
      spec.dims.push_back(v);
    }
  }
  if (parts.size() == 5)
    for (auto t : split(parts[3], '+')) {
      if (t.empty()) bad_id(id, "empty variant token");
      spec.variant.emplace_back(t);
    }
  std::string_view seed = parts.back();
  if (seed.substr(0, 5) != "seed=" || !parse_int(seed.substr(5), spec.seed))
    bad_id(id, fmt::format("last part '{}' must be seed=<non-negative integer>", seed));
  return spec;
}

}  // namespace polychip::precision
