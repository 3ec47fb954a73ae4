#include "tolerance.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include <fmt/format.h>

#include "json_data_file.hpp"
#include "polychip/error.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::precision {

// Defined in the generated file holding conformance/data/tolerances.json.
extern const char* const kBuiltinTolerancesJson;

namespace {

[[noreturn]] void bad(const std::string& origin, const std::string& why) {
  throw_bad_data_file("tolerances", origin, why);
}

// doc[section][dtype] or doc[section]["*"], as a number; false when absent.
bool per_dtype(const nlohmann::json& section, DType dtype, double& out) {
  if (!section.is_object()) return false;
  const std::string name(dtype_name(dtype));
  for (const std::string& key : {name, std::string("*")}) {
    auto it = section.find(key);
    if (it != section.end()) {
      if (!it->is_number()) return false;
      out = it->get<double>();
      return true;
    }
  }
  return false;
}

constexpr std::string_view kFileKind = "tolerances";

// An op of the contract, or "gemm:<variant>" where `variants` allows it.
bool known_op_key(const std::string& key, bool variants) {
  const auto colon = key.find(':');
  if (colon == std::string::npos) return find_op(key) != nullptr;
  if (!variants || key.substr(0, colon) != "gemm") return false;
  const std::string_view variant = std::string_view(key).substr(colon + 1);
  return std::find(std::begin(kGemmToleranceVariants), std::end(kGemmToleranceVariants), variant) !=
         std::end(kGemmToleranceVariants);
}

}  // namespace

std::string_view tolerance_mode_name(ToleranceMode m) {
  switch (m) {
    case ToleranceMode::kUlp:
      return "ulp";
    case ToleranceMode::kClose:
      return "close";
    case ToleranceMode::kExact:
      return "exact";
  }
  return "?";
}

ToleranceTable ToleranceTable::from_json(const nlohmann::json& doc, std::string origin) {
  if (!doc.is_object()) bad(origin, "the document must be a JSON object");
  if (!has_schema(doc, "polychip.tolerances/1"))
    bad(origin, "'schema' must be \"polychip.tolerances/1\"");
  refuse_unknown_keys(kFileKind, origin, doc, "the document",
                      {"schema", "about", "defaults", "ulp_bounds", "ops"});
  if (!doc.contains("defaults") || !doc["defaults"].is_object())
    bad(origin, "'defaults' must be an object");
  refuse_unknown_keys(kFileKind, origin, doc["defaults"], "defaults",
                      {"rtol", "atol_factor", "row_atol_factor", "quality"});
  if (doc["defaults"].contains("row_atol_factor") &&
      !doc["defaults"]["row_atol_factor"].is_object())
    bad(origin, "'defaults.row_atol_factor' must be an object of dtype -> number");
  for (const char* section : {"rtol", "atol_factor"})
    if (!doc["defaults"].contains(section) || !doc["defaults"][section].is_object())
      bad(origin, fmt::format("'defaults.{}' must be an object of dtype -> number", section));
  if (doc["defaults"].contains("quality")) {
    const nlohmann::json& quality = doc["defaults"]["quality"];
    if (!quality.is_object()) bad(origin, "'defaults.quality' must be an object");
    refuse_unknown_keys(kFileKind, origin, quality, "defaults.quality", {"ratio", "floor"});
    // ratio: how many times the NVIDIA emulation's error a warning takes,
    // floor: the fraction of the tolerance below which none is given.
    if (quality.contains("ratio") &&
        (!quality["ratio"].is_number() || !(quality["ratio"].get<double>() > 0)))
      bad(origin, "'defaults.quality.ratio' must be a positive number");
    if (quality.contains("floor") &&
        (!quality["floor"].is_number() || !(quality["floor"].get<double>() >= 0)))
      bad(origin, "'defaults.quality.floor' must be a non-negative number");
  }
  for (const char* section : {"ulp_bounds", "ops"})
    if (doc.contains(section) && !doc[section].is_object())
      bad(origin, fmt::format("'{}' must be an object keyed by op name", section));
  auto check_numbers = [&](const nlohmann::json& obj, const std::string& where) {
    for (auto& [key, value] : obj.items()) {
      if (key != "*") {
        try {
          parse_dtype(key);
        } catch (const Error& e) {
          bad(origin, fmt::format("'{}': {}", where, e.message()));
        }
      }
      if (!value.is_number() || value.get<double>() < 0)
        bad(origin, fmt::format("'{}.{}' must be a non-negative number", where, key));
    }
  };
  check_numbers(doc["defaults"]["rtol"], "defaults.rtol");
  check_numbers(doc["defaults"]["atol_factor"], "defaults.atol_factor");
  if (doc["defaults"].contains("row_atol_factor"))
    check_numbers(doc["defaults"]["row_atol_factor"], "defaults.row_atol_factor");
  if (doc.contains("ulp_bounds"))
    for (auto& [op, bounds] : doc["ulp_bounds"].items()) {
      if (!known_op_key(op, false))
        bad(origin, fmt::format("'ulp_bounds.{}': no op '{}' in the contract", op, op));
      if (!bounds.is_object()) bad(origin, fmt::format("'ulp_bounds.{}' must be an object", op));
      check_numbers(bounds, "ulp_bounds." + op);
    }
  if (doc.contains("ops"))
    for (auto& [op, entry] : doc["ops"].items()) {
      if (!known_op_key(op, true))
        bad(origin, fmt::format("'ops.{}': no op '{}' in the contract (variants: gemm:{})", op, op,
                                fmt::join(kGemmToleranceVariants, ", gemm:")));
      if (!entry.is_object()) bad(origin, fmt::format("'ops.{}' must be an object", op));
      refuse_unknown_keys(kFileKind, origin, entry, "ops." + op,
                          {"rtol", "atol_factor", "row_atol_factor", "about"});
      if (entry.contains("row_atol_factor") && !is_row_op(op))
        bad(origin, fmt::format("'ops.{}.row_atol_factor': {} is not a row op (families "
                                "reduction, softmax, norm, loss)",
                                op, op));
      for (const char* section : {"rtol", "atol_factor", "row_atol_factor"}) {
        if (!entry.contains(section)) continue;
        const std::string where = "ops." + op + "." + section;
        if (!entry[section].is_object())
          bad(origin, fmt::format("'{}' must be an object of dtype -> number", where));
        check_numbers(entry[section], where);
      }
    }
  ToleranceTable t;
  t.doc_ = doc;
  t.origin_ = std::move(origin);
  return t;
}

ToleranceTable ToleranceTable::from_file(const std::string& path) {
  return from_json(read_json_data_file("tolerances", path), path);
}

const ToleranceTable& ToleranceTable::builtin() {
  static const ToleranceTable table =
      from_json(nlohmann::json::parse(kBuiltinTolerancesJson), "built-in tolerances.json");
  return table;
}

Tolerance ToleranceTable::lookup(const std::string& op, DType dtype) const {
  Tolerance t;
  if (!is_floating(dtype)) {
    t.mode = ToleranceMode::kExact;
    t.source = "integer output: exact";
    return t;
  }
  const auto& defaults = doc_["defaults"];
  if (defaults.contains("quality")) {
    t.quality_ratio = defaults["quality"].value("ratio", t.quality_ratio);
    t.quality_floor = defaults["quality"].value("floor", t.quality_floor);
  }
  if (doc_.contains("ulp_bounds") && doc_["ulp_bounds"].contains(op) &&
      per_dtype(doc_["ulp_bounds"][op], dtype, t.ulp)) {
    t.mode = ToleranceMode::kUlp;
    t.source = fmt::format("ulp_bounds.{}", op);
    return t;
  }
  t.mode = ToleranceMode::kClose;
  const nlohmann::json* op_entry =
      doc_.contains("ops") && doc_["ops"].contains(op) ? &doc_["ops"][op] : nullptr;
  // Looks `section` up in the op's entry, then in the defaults; names the
  // entry that decided in the source. False when neither has the dtype.
  std::string source;
  auto look_up = [&](const char* section, double& value) {
    if (op_entry && op_entry->contains(section) && per_dtype((*op_entry)[section], dtype, value)) {
      source += fmt::format("{}ops.{}.{}", source.empty() ? "" : ", ", op, section);
      return true;
    }
    if (defaults.contains(section) && per_dtype(defaults[section], dtype, value)) {
      source += fmt::format("{}defaults.{}", source.empty() ? "" : ", ", section);
      return true;
    }
    return false;
  };
  if (!look_up("rtol", t.rtol))
    bad(origin_, fmt::format("no 'rtol' for dtype {} (op {})", dtype_name(dtype), op));
  // Row ops: a row_atol_factor for the dtype replaces atol_factor and grows
  // as sqrt(reduce_len).
  t.atol_grows_as_sqrt = is_row_op(op) && look_up("row_atol_factor", t.atol_factor);
  if (!t.atol_grows_as_sqrt && !look_up("atol_factor", t.atol_factor))
    bad(origin_, fmt::format("no 'atol_factor' for dtype {} (op {})", dtype_name(dtype), op));
  t.source = source;
  return t;
}

bool is_row_op(const std::string& op) {
  const OpSpec* spec = find_op(op);
  if (!spec) return false;
  const std::string_view fam = spec->family;
  return fam == "reduction" || fam == "softmax" || fam == "norm" || fam == "loss";
}

double close_atol(const Tolerance& t, int64_t reduce_len, double scale) {
  const double n = static_cast<double>(std::max<int64_t>(1, reduce_len));
  return t.atol + t.atol_factor * (t.atol_grows_as_sqrt ? std::sqrt(n) : n) * scale;
}

nlohmann::json to_json(const Tolerance& t) {
  nlohmann::json j = {{"mode", tolerance_mode_name(t.mode)}, {"source", t.source}};
  if (t.mode == ToleranceMode::kUlp) j["ulp"] = t.ulp;
  if (t.mode == ToleranceMode::kClose) {
    j["rtol"] = t.rtol;
    j["atol_factor"] = t.atol_factor;
    j["atol_growth"] = t.atol_grows_as_sqrt ? "sqrt(reduce_len)" : "reduce_len";
    if (t.atol != 0) j["atol"] = t.atol;
  }
  if (t.mode != ToleranceMode::kExact) {
    j["quality_ratio"] = t.quality_ratio;
    j["quality_floor"] = t.quality_floor;
  }
  return j;
}

namespace {

std::string bound_words(const Tolerance& t) {
  switch (t.mode) {
    case ToleranceMode::kUlp:
      return fmt::format("ulp {}", t.ulp);
    case ToleranceMode::kClose:
      return fmt::format("close (rtol {}, atol_factor {}{})", t.rtol, t.atol_factor,
                         t.atol_grows_as_sqrt ? " x sqrt(reduce_len)" : "");
    case ToleranceMode::kExact:
      break;
  }
  return "exact";
}

}  // namespace

std::string loosening(const Tolerance& used, const Tolerance& shipped) {
  if (used.mode != shipped.mode)
    return fmt::format("{} where the built-in has {}", bound_words(used), bound_words(shipped));
  std::vector<std::string> looser;
  auto compare = [&](const char* name, double u, double s) {
    if (u > s) looser.push_back(fmt::format("{} {} > {}", name, u, s));
  };
  if (used.mode == ToleranceMode::kUlp) compare("ulp", used.ulp, shipped.ulp);
  if (used.mode == ToleranceMode::kClose) {
    compare("rtol", used.rtol, shipped.rtol);
    compare("atol_factor", used.atol_factor, shipped.atol_factor);
    // A linear bound is the looser at every reduction length past 1.
    if (!used.atol_grows_as_sqrt && shipped.atol_grows_as_sqrt)
      looser.push_back("atol grows as reduce_len, not sqrt(reduce_len)");
  }
  return fmt::format("{}", fmt::join(looser, ", "));
}

std::vector<ToleranceLoosening> loosened_past_builtin(const ToleranceTable& table) {
  std::vector<std::string> keys;
  for (const OpSpec& op : op_contract()) keys.push_back(op.name);
  for (std::string_view variant : kGemmToleranceVariants)
    keys.push_back(fmt::format("gemm:{}", variant));
  std::vector<ToleranceLoosening> loosened;
  for (const std::string& key : keys)
    for (DType dtype : kAllDTypes) {
      if (!is_floating(dtype)) continue;
      std::string change =
          loosening(table.lookup(key, dtype), ToleranceTable::builtin().lookup(key, dtype));
      if (!change.empty()) loosened.push_back({key, dtype, std::move(change)});
    }
  return loosened;
}

nlohmann::json to_json(const std::vector<ToleranceLoosening>& loosened) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& l : loosened)
    list.push_back({{"op", l.op}, {"dtype", dtype_name(l.dtype)}, {"change", l.change}});
  return list;
}

}  // namespace polychip::precision
