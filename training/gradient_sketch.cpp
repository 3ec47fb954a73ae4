#include "gradient_sketch.hpp"

#include <algorithm>
#include <cmath>

#include "polychip/error.hpp"

namespace polychip::training {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

bool is_gradient_check_step(int64_t step) {
  return std::find(std::begin(kGradientCheckSteps), std::end(kGradientCheckSteps), step) !=
         std::end(kGradientCheckSteps);
}

double sketch_sign(int k, int64_t i) {
  return splitmix64((static_cast<uint64_t>(k) << 32) + static_cast<uint64_t>(i)) >> 63 ? -1.0 : 1.0;
}

GradientCheck gradient_check(int64_t step, std::span<const double> grads,
                             const Gpt2ParamLayout& layout) {
  if (static_cast<int64_t>(grads.size()) != layout.total())
    throw Error(StatusCode::kInvalidArgument, "gradient check: " + std::to_string(grads.size()) +
                                                  " gradients for a model of " +
                                                  std::to_string(layout.total()));
  GradientCheck check{.step = step, .tensors = {}};
  for (const ParamInfo& p : layout.params()) {
    TensorGradient t{.name = p.name, .norm = 0, .sketch = std::vector<double>(kSketchSize, 0.0)};
    const std::span<const double> g =
        grads.subspan(static_cast<size_t>(p.offset), static_cast<size_t>(p.numel()));
    double squares = 0;
    for (double v : g) squares += v * v;
    t.norm = std::sqrt(squares);
    const double scale = 1.0 / std::sqrt(static_cast<double>(g.size()));
    for (int k = 0; k < kSketchSize; ++k) {
      double sum = 0;
      for (size_t i = 0; i < g.size(); ++i) sum += sketch_sign(k, static_cast<int64_t>(i)) * g[i];
      t.sketch[k] = sum * scale;
    }
    check.tensors.push_back(std::move(t));
  }
  return check;
}

double TensorDeviation::relative() const { return std::max(norm_relative, direction_relative); }

std::vector<TensorDeviation> gradient_deviations(const GradientCheck& reference,
                                                 const GradientCheck& run,
                                                 const Gpt2ParamLayout& layout) {
  const auto& params = layout.params();
  if (reference.tensors.size() != params.size() || run.tensors.size() != params.size())
    throw Error(StatusCode::kInvalidArgument,
                "gradient check of step " + std::to_string(run.step) + ": " +
                    std::to_string(reference.tensors.size()) + " reference tensors and " +
                    std::to_string(run.tensors.size()) + " run tensors for a model of " +
                    std::to_string(params.size()));
  std::vector<TensorDeviation> out;
  for (size_t t = 0; t < params.size(); ++t) {
    const TensorGradient &ref = reference.tensors[t], &got = run.tensors[t];
    if (ref.name != params[t].name || got.name != params[t].name ||
        ref.sketch.size() != kSketchSize || got.sketch.size() != kSketchSize)
      throw Error(StatusCode::kInvalidArgument,
                  "gradient check of step " + std::to_string(run.step) + ": tensor " +
                      std::to_string(t) + " is '" + got.name + "' in the run and '" + ref.name +
                      "' in the reference, '" + params[t].name +
                      "' in the model, with sketches of " + std::to_string(got.sketch.size()) +
                      " and " + std::to_string(ref.sketch.size()) + " values");
    TensorDeviation d{.name = ref.name, .norm_relative = 0, .direction_relative = 0};
    double distance = 0;
    bool finite = std::isfinite(got.norm);
    for (int k = 0; k < kSketchSize; ++k) {
      finite = finite && std::isfinite(got.sketch[k]);
      distance += (got.sketch[k] - ref.sketch[k]) * (got.sketch[k] - ref.sketch[k]);
    }
    const double expected_sketch =
        ref.norm * std::sqrt(kSketchSize / static_cast<double>(params[t].numel()));
    if (!finite) {
      d.norm_relative = d.direction_relative = INFINITY;
    } else if (ref.norm == 0) {
      d.norm_relative = got.norm == 0 ? 0 : INFINITY;
      d.direction_relative = distance == 0 ? 0 : INFINITY;
    } else {
      d.norm_relative = std::fabs(got.norm - ref.norm) / ref.norm;
      d.direction_relative = std::sqrt(distance) / expected_sketch;
    }
    out.push_back(d);
  }
  return out;
}

std::string gradient_op(const std::string& name) {
  if (name == "wte.weight") return "gemm (the tied head) and embedding_backward";
  if (name == "wpe.weight") return "embedding_backward";
  if (name.find("ln_") != std::string::npos) return "layernorm_backward";
  if (ends_with(name, ".bias")) return "reduce_sum (axis 0: the bias gradient)";
  return "gemm (the weight gradient, trans_a)";
}

nlohmann::json gradient_checks_json(const std::vector<GradientCheck>& checks) {
  nlohmann::json out = nlohmann::json::array();
  for (const GradientCheck& c : checks) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const TensorGradient& t : c.tensors) tensors.push_back({t.name, t.norm, t.sketch});
    out.push_back({{"step", c.step}, {"tensors", tensors}});
  }
  return out;
}

std::vector<GradientCheck> parse_gradient_checks(const nlohmann::json& json) {
  std::vector<GradientCheck> checks;
  for (const auto& c : json) {
    GradientCheck check{.step = c.at("step").get<int64_t>(), .tensors = {}};
    for (const auto& t : c.at("tensors"))
      check.tensors.push_back({.name = t.at(0).get<std::string>(),
                               .norm = t.at(1).get<double>(),
                               .sketch = t.at(2).get<std::vector<double>>()});
    checks.push_back(std::move(check));
  }
  return checks;
}

}  // namespace polychip::training
