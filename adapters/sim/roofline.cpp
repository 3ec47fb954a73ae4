#include "roofline.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string_view>

#include "polychip/dtype.hpp"
#include "polychip/op_contract.hpp"

namespace polychip::sim {
namespace {

constexpr std::string_view kVariable = "POLYCHIP_SIM_MODELLED";

bool finite_number(const std::string& text, double& value) {
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && std::isfinite(value);
}

// The device type "sim.modelled-<name>" must stay a device-type id:
// lower-case [a-z0-9_-] parts, 63 characters at most.
bool valid_name(const std::string& name) {
  return !name.empty() && name.size() <= 40 &&
         std::all_of(name.begin(), name.end(), [](unsigned char c) {
           return std::islower(c) || std::isdigit(c) || c == '_';
         });
}

// "8:4[:20]" into the roofline; false when malformed.
bool parse_roofline(const std::string& text, Roofline& roofline) {
  std::vector<std::string> fields;
  std::stringstream in(text);
  for (std::string field; std::getline(in, field, ':');) fields.push_back(field);
  if (text.empty() || text.back() == ':' || fields.size() < 2 || fields.size() > 3) return false;
  double values[3] = {0, 0, 0};
  for (size_t k = 0; k < fields.size(); ++k)  // peak and bandwidth > 0, latency >= 0
    if (!finite_number(fields[k], values[k]) || values[k] < 0 || (k < 2 && values[k] == 0))
      return false;
  roofline = {values[0], values[1], values[2]};
  return true;
}

}  // namespace

ModelledChips parse_modelled_chips(const char* text) {
  ModelledChips out;
  if (!text || !*text) return out;
  std::set<std::string> names;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    const auto eq = item.find('=');
    ModelledChip chip;
    chip.name = item.substr(0, eq);
    if (eq == std::string::npos || !valid_name(chip.name) ||
        !parse_roofline(item.substr(eq + 1), chip.roofline)) {
      out.error = std::string(kVariable) + ": '" + item +
                  "' is not name=GFLOP/s:GB/s[:launch µs] (a name of lower-case letters, digits "
                  "and _, at most 40; peak and bandwidth > 0, latency >= 0)";
      out.chips.clear();
      return out;
    }
    if (!names.insert(chip.name).second) {
      out.error = std::string(kVariable) + ": the chip '" + chip.name + "' is named twice";
      out.chips.clear();
      return out;
    }
    out.chips.push_back(std::move(chip));
  }
  if (std::string_view(text).back() == ',') {
    out.error = std::string(kVariable) + ": '" + text + "' ends with ','";
    out.chips.clear();
  }
  return out;
}

KernelWork kernel_work(const cpu::KernelCall& call) {
  KernelWork work;
  double largest = 0;
  for (const cpu::TensorView& t : call.tensors) {
    const double n = static_cast<double>(t.numel());
    work.bytes += n * static_cast<double>(dtype_size(t.dtype));
    largest = std::max(largest, n);
  }
  const std::string_view op = call.op;
  if (op == "gemm" && call.tensors.size() == 4) {
    const cpu::TensorView &a = call[0], &y = call[3];
    const bool trans_a = call.attrs && call.i(attr::kTransA) != 0;
    const int64_t k = a.rank >= 2 ? a.shape[a.rank - (trans_a ? 2 : 1)] : 1;
    work.flops = 2.0 * static_cast<double>(y.numel()) * static_cast<double>(k);
  } else if ((op == "attention" || op == "attention_backward") && call.tensors.size() >= 2) {
    const cpu::TensorView& q = call[op == "attention" ? 0 : 1];
    const double s = q.rank == 4 ? static_cast<double>(q.shape[2]) : 1;
    const double per_score = op == "attention" ? 4.0 : 10.0;
    work.flops = per_score * s * static_cast<double>(q.numel());
  } else {
    work.flops = largest;
  }
  return work;
}

double roofline_seconds(const Roofline& roofline, const KernelWork& work) {
  return std::max(work.flops / (roofline.gflops * 1e9), work.bytes / (roofline.gbytes_s * 1e9)) +
         roofline.launch_us * 1e-6;
}

}  // namespace polychip::sim
