// The close tolerance of the row ops (reductions, the softmax family, the
// norms, the losses) grows as sqrt(row length), so that an f32 row op
// computed at f16 precision fails at every length the levels use (the old
// bound, linear in the length, let it through from about a thousand
// elements on), while the NVIDIA emulation's f32 results pass with a wide
// margin (docs/precision-suite.md, "close (rows)").
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "case_list.hpp"
#include "case_runner.hpp"
#include "metrics.hpp"
#include "precision/oracle/oracle.hpp"
#include "problem.hpp"
#include "reference/nvidia_reference.hpp"
#include "tolerance.hpp"

namespace polychip::precision {
namespace {

// f16's 11 significant bits, f32's exponent range: only the precision is lower.
double f16_precision(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  int e = 0;
  const double m = std::frexp(v, &e);
  return std::ldexp(std::nearbyint(std::ldexp(m, 11)), e - 11);
}

std::vector<HostTensor> run(HostOpFn fn, const Problem& p, const std::vector<HostTensor>& inputs) {
  std::vector<HostTensor> out = p.outputs;
  fn(*p.op, inputs, out, p.attrs);
  return out;
}

// The row op computed at f16 precision: its f32 inputs and outputs rounded
// to 11 significant bits (what adapters/sim's sim.f16_rows does).
std::vector<HostTensor> at_f16_precision(const Problem& p) {
  std::vector<HostTensor> in = p.inputs;
  for (HostTensor& t : in)
    if (t.dtype == DType::kF32)
      for (double& v : t.values) v = f16_precision(v);
  std::vector<HostTensor> out = run(kOracle, p, in);
  for (HostTensor& t : out)
    if (t.dtype == DType::kF32)
      for (double& v : t.values) v = f16_precision(v);
  return out;
}

// The largest fraction of its tolerance any output uses (built-in table).
double worst_fraction(const Problem& p, const std::vector<HostTensor>& got,
                      const std::vector<HostTensor>& exact, const ToleranceTable& table) {
  double worst = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const Tolerance tol = table.lookup(p.spec.op, p.outputs[k].dtype);
    worst =
        std::max(worst, compare_problem_output(p, k, got[k], exact[k], tol).max_tolerance_fraction);
  }
  return worst;
}

// Every f32 case of quick and standard whose op's tolerance grows as the
// square root of its row, on ordinary values: not the exact-input ones
// (their tolerance is 0), not special values (a line holding the largest
// finite value sets the scale of every line) and not large logits (a
// saturated softmax is 0 or 1 at any precision).
std::vector<CaseSpec> f32_row_cases() {
  std::vector<CaseSpec> cases;
  std::set<std::string> seen;
  for (Level level : {Level::kQuick, Level::kStandard})
    for (const CaseSpec& c : cases_for_level(level)) {
      if (c.dtype != DType::kF32 || c.has("exact") || c.has("special") || c.has("large") ||
          !seen.insert(case_id(c)).second)
        continue;
      if (ToleranceTable::builtin().lookup(c.op, DType::kF32).atol_grows_as_sqrt)
        cases.push_back(c);
    }
  return cases;
}

TEST(RowTolerance, EveryRowOpGrowsAsTheSquareRootInF32) {
  for (const char* op :
       {"reduce_sum", "reduce_mean", "l2_norm", "softmax", "log_softmax", "softmax_backward",
        "log_softmax_backward", "layernorm", "layernorm_backward", "rmsnorm", "rmsnorm_backward",
        "cross_entropy", "cross_entropy_backward"})
    EXPECT_TRUE(ToleranceTable::builtin().lookup(op, DType::kF32).atol_grows_as_sqrt) << op;
  EXPECT_FALSE(ToleranceTable::builtin().lookup("gemm", DType::kF32).atol_grows_as_sqrt);
}

// The lower precision fails every case, at every row length; the NVIDIA
// emulation passes each with room to spare.
TEST(RowTolerance, F16PrecisionFailsAtEveryLengthTheNvidiaEmulationPasses) {
  const std::vector<CaseSpec> cases = f32_row_cases();
  std::map<std::string, std::set<int64_t>> lengths;  // op -> row lengths checked
  int judged = 0;
  double emulation_worst = 0, lower_best = INFINITY;
  std::string emulation_worst_id, lower_best_id;
  for (const CaseSpec& c : cases) {
    const Problem p = build_problem(c, kOracle);
    if (!is_floating(p.outputs[0].dtype)) continue;  // argmax: an index, exact
    ++judged;
    const std::vector<HostTensor> exact = run(kOracle, p, p.inputs);
    const double lower = worst_fraction(p, at_f16_precision(p), exact, ToleranceTable::builtin());
    const double emulated = worst_fraction(p, run(reference::kNvidiaReference, p, p.inputs), exact,
                                           ToleranceTable::builtin());
    EXPECT_GT(lower, 1) << case_id(c) << ": computed at f16 precision, it passes";
    EXPECT_LT(emulated, 0.5) << case_id(c) << ": the NVIDIA emulation uses " << emulated
                             << " of its tolerance";
    lengths[c.op].insert(p.reduce_len);
    if (emulated > emulation_worst) emulation_worst = emulated, emulation_worst_id = case_id(c);
    if (lower < lower_best) lower_best = lower, lower_best_id = case_id(c);
  }
  std::cout << fmt::format(
      "{} f32 row cases: the NVIDIA emulation uses at most {:.3g} of the tolerance ({}); at f16 "
      "precision every case uses at least {:.3g}x it ({})\n",
      judged, emulation_worst, emulation_worst_id, lower_best, lower_best_id);
  // The long rows of real models are among them.
  for (const char* op : {"reduce_sum", "softmax", "log_softmax", "layernorm", "rmsnorm"})
    for (int64_t len : {4096, 8192, 50257}) EXPECT_TRUE(lengths[op].count(len)) << op << " " << len;
  EXPECT_TRUE(lengths["cross_entropy"].count(50257));
  EXPECT_TRUE(lengths["layernorm_backward"].count(8192));
}

// Under the linear bound the same f16-precision results pass long rows:
// what this rule exists to stop.
TEST(RowTolerance, ALinearBoundWouldLetF16PrecisionThrough) {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "schema": "polychip.tolerances/1",
    "defaults": {"rtol": {"*": 1.3e-6}, "atol_factor": {"*": 2.4e-7}}})");
  const ToleranceTable linear = ToleranceTable::from_json(doc, "linear");
  EXPECT_FALSE(linear.lookup("softmax", DType::kF32).atol_grows_as_sqrt);
  int passed = 0;
  for (const char* id : {"softmax/f32/2x50257/seed=1", "layernorm/f32/2x8192/seed=1",
                         "reduce_sum/f32/2x50257/seed=1"}) {
    const Problem p = build_problem(parse_case_id(id), kOracle);
    const std::vector<HostTensor> exact = run(kOracle, p, p.inputs);
    const std::vector<HostTensor> lower = at_f16_precision(p);
    EXPECT_GT(worst_fraction(p, lower, exact, ToleranceTable::builtin()), 1) << id;
    passed += worst_fraction(p, lower, exact, linear) <= 1;
  }
  EXPECT_GE(passed, 2);
}

}  // namespace
}  // namespace polychip::precision
