// Exact-integer cases of attention and the norms (exact_inputs.hpp): their
// exact results are what a correct device computes bit for bit, they are
// not Mistrusted, and a kernel one ulp off on one element — well inside any
// rounding tolerance — fails them while it passes the ordinary cases.
#include "exact_inputs.hpp"

#include <bit>
#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "case_runner.hpp"
#include "kernel_test_support.hpp"

extern "C" const polychip_adapter_api* polychip_cpu_adapter_get_api(void);

namespace polychip::precision {
namespace {

// The oracle's result rounded to f32, with output 0's element 0 one ulp
// high: a kernel whose only defect is one wrong low bit (a lost term, a
// misplaced tail element, an approximated eps) at one element. Contiguous
// f32 tensors only.
polychip_status oracle_one_ulp_off(const polychip_kernel_args* a) {
  const OpSpec& op = *find_op(a->op);
  std::vector<HostTensor> in, out;
  for (int t = 0; t < a->num_tensors; ++t) {
    const polychip_tensor& pt = a->tensors[t];
    HostTensor h{DType::kF32, Shape(pt.shape, pt.shape + pt.rank), {}};
    const float* p = test::host_f32(a, t);
    if (!p) return POLYCHIP_UNSUPPORTED;
    if (!op.tensors[static_cast<size_t>(t)].is_output)
      h.values.assign(p, p + element_count(h.shape));
    (op.tensors[static_cast<size_t>(t)].is_output ? out : in).push_back(std::move(h));
  }
  oracle_run(op, in, out, *a->attrs);
  const int first_output = a->num_tensors - static_cast<int>(out.size());
  for (size_t k = 0; k < out.size(); ++k) {
    float* p = test::host_f32(a, first_output + static_cast<int>(k));
    for (size_t i = 0; i < out[k].values.size(); ++i) p[i] = static_cast<float>(out[k].values[i]);
    if (k == 0) p[0] = std::nextafter(p[0], INFINITY);
  }
  return POLYCHIP_OK;
}

class ExactInputsTest : public ::testing::Test {
 protected:
  ExactInputsTest()
      : runtime_(options()),
        device_(runtime_.device("cpu")),
        stream_(device_),
        ctx_(test::case_context(runtime_, device_, stream_, waivers_, "cpu")) {}
  static RuntimeOptions options() {
    RuntimeOptions o;
    o.builtin_adapters = {&polychip_cpu_adapter_get_api};
    return o;
  }
  CaseOutcome run(const std::string& id) { return run_case(parse_case_id(id), ctx_); }

  Runtime runtime_;
  Device device_;
  Stream stream_;
  WaiverList waivers_;
  CaseContext ctx_;
};

const char* const kExactCases[] = {"attention/f32/1x2x64x16/exact/seed=1",
                                   "attention/f32/2x2x64x32/exact+noncausal/seed=1",
                                   "attention/f16/1x2x16x16/exact+noncausal/seed=1",
                                   "attention/bf16/1x2x64x64/exact+noncausal/seed=1",
                                   "layernorm/f32/16x1024/exact/seed=1",
                                   "layernorm/bf16/16x64/exact/seed=1",
                                   "rmsnorm/f32/16x1023/exact/seed=1",
                                   "rmsnorm/f16/16x256/exact/seed=1"};

TEST_F(ExactInputsTest, CpuComputesTheExactResultAndTheCasesAreTrusted) {
  for (const char* id : kExactCases) {
    const CaseOutcome out = run(id);
    EXPECT_EQ(out.verdict, Verdict::kPass) << id << ": " << out.record.value("message", "");
    EXPECT_EQ(out.record["outputs"][0]["tolerance"]["mode"], "exact") << id;
    EXPECT_EQ(out.record["outputs"][0]["metrics"]["max_abs_error"], 0.0) << id;
  }
}

TEST_F(ExactInputsTest, EveryIntermediateIsExact) {
  // Attention: each row's o is one row of v it may see; lse takes two values.
  for (const char* id :
       {"attention/f32/2x2x64x32/exact+noncausal/seed=1", "attention/f32/1x2x64x16/exact/seed=1"}) {
    Problem p = build_problem(parse_case_id(id), kOracle);
    std::vector<HostTensor> out = p.outputs;
    oracle_run(*p.op, p.inputs, out, p.attrs);
    const int64_t s = p.spec.dims[2], dim = p.spec.dims[3];
    const auto& v = p.inputs[2].values;
    const auto& o = out[0].values;
    for (int64_t row = 0; row < element_count(out[1].shape); ++row) {
      const int64_t i = row % s, head = row - i;
      const int64_t visible = p.spec.has("noncausal") ? s : i + 1;
      bool found = false;
      for (int64_t j = 0; j < visible && !found; ++j)
        found = std::equal(o.begin() + row * dim, o.begin() + (row + 1) * dim,
                           v.begin() + (head + j) * dim);
      EXPECT_TRUE(found) << id << ": row " << row;
    }
    EXPECT_EQ(std::set<double>(out[1].values.begin(), out[1].values.end()).size(), 2u) << id;
  }
  // Layernorm: mean integer, rstd a power of two.
  Problem p = build_problem(parse_case_id("layernorm/f32/16x1024/exact/seed=1"), kOracle);
  std::vector<HostTensor> out = p.outputs;
  oracle_run(*p.op, p.inputs, out, p.attrs);
  std::set<double> rstd(out[2].values.begin(), out[2].values.end());
  EXPECT_GE(rstd.size(), 2u);
  for (double r : rstd) EXPECT_TRUE(std::has_single_bit(static_cast<uint64_t>(r * 4))) << r;
  for (double m : out[1].values) EXPECT_EQ(m, std::round(m));
}

TEST_F(ExactInputsTest, ShapesThatCannotBeExactAreRefused) {
  for (const char* id : {"attention/f32/1x1x64x11/exact/seed=1",  // D < 2 log2 S
                         "attention/f32/1x1x1x32/exact/seed=1",   // S < 2
                         "layernorm/f32/4x1023/exact/seed=1"}) {  // D odd
    const CaseOutcome out = run(id);
    EXPECT_EQ(out.verdict, Verdict::kFail) << id;
    EXPECT_NE(out.record.value("message", "").find("harness: cannot build the case"),
              std::string::npos)
        << id;
  }
}

TEST_F(ExactInputsTest, OneUlpOffPassesTheOrdinaryCasesAndFailsTheExactOnes) {
  for (const char* op : {"attention", "layernorm", "rmsnorm"})
    runtime_.dispatcher().patch(device_.device_type(), op, std::nullopt, &oracle_one_ulp_off,
                                "exact_inputs_test");
  for (const char* id : {"attention/f32/2x2x64x32/noncausal/seed=1", "layernorm/f32/16x1024/seed=1",
                         "rmsnorm/f32/16x1023/seed=1"}) {
    const CaseOutcome out = run(id);
    EXPECT_EQ(out.verdict, Verdict::kPass) << id << ": " << out.record.value("message", "");
  }
  for (const char* id :
       {"attention/f32/2x2x64x32/exact+noncausal/seed=1", "layernorm/f32/16x1024/exact/seed=1",
        "rmsnorm/f32/16x1023/exact/seed=1"}) {
    const CaseOutcome out = run(id);
    EXPECT_EQ(out.verdict, Verdict::kFail) << id;
    EXPECT_NE(out.record.value("message", "").find("1 of"), std::string::npos)
        << id << ": " << out.record.value("message", "");
  }
}

}  // namespace
}  // namespace polychip::precision
