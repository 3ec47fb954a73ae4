// The NVIDIA emulation: crafted cases where its arithmetic (FMA, f32
// accumulation order, TF32, one output rounding, reduction trees) gives a
// result different from exact math, and every op against the float64
// oracle within a bound that follows from its documented arithmetic.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <string>

#include "precision/oracle/oracle.hpp"
#include "reference/cuda_math.hpp"
#include "reference/float_formats.hpp"
#include "reference/nvidia_reference.hpp"
#include "reference/reduction_order.hpp"

namespace polychip::reference {
namespace {

HostTensor tensor(DType dtype, Shape shape, std::vector<double> values) {
  return {dtype, std::move(shape), std::move(values)};
}

std::vector<HostTensor> emulate(const std::string& name, std::vector<HostTensor> in,
                                std::vector<HostTensor> out, polychip_op_attrs* attrs = nullptr) {
  const OpSpec& op = *find_op(name);
  polychip_op_attrs a = attrs ? *attrs : default_attrs(op);
  nvidia_reference_run(op, in, out, a);
  return out;
}

double gemm_1xk(DType dtype, std::vector<double> a, std::vector<double> b, int64_t math_mode = 0) {
  const int64_t k = static_cast<int64_t>(a.size());
  polychip_op_attrs attrs = default_attrs(*find_op("gemm"));
  attrs.ints[attr::kMathMode] = math_mode;
  return emulate("gemm",
                 {tensor(dtype, {1, k}, a), tensor(dtype, {k, 1}, b), tensor(dtype, {1, 1}, {0})},
                 {tensor(dtype, {1, 1}, {})}, &attrs)[0]
      .values[0];
}

TEST(EmulationTest, EveryContractOpIsEmulated) {
  for (const auto& op : op_contract()) EXPECT_TRUE(nvidia_reference_supports(op.name)) << op.name;
}

TEST(EmulationTest, Fp32GemmAccumulatesInKOrderWithRounding) {
  // 1 + 2^-24 + 2^-24: each f32 step is a tie that rounds back to 1; the
  // exact (and double) sum is 1 + 2^-23, representable in f32.
  const double t = 0x1p-24;
  EXPECT_EQ(gemm_1xk(DType::kF32, {1, t, t}, {1, 1, 1}), 1.0);
  EXPECT_EQ(static_cast<float>(1.0 + t + t), 1.0f + 0x1p-23f);
  // The same terms in another order: the small ones first survive.
  EXPECT_EQ(gemm_1xk(DType::kF32, {t, t, 1}, {1, 1, 1}), 1.0 + 0x1p-23);
}

TEST(EmulationTest, Fp32GemmUsesFusedMultiplyAdd) {
  // -1 + (1 + 2^-12)^2: the FMA keeps the 2^-24 term the separately rounded
  // product (1 + 2^-11) loses.
  const double a = 1 + 0x1p-12;
  EXPECT_EQ(gemm_1xk(DType::kF32, {-1, a}, {1, a}), 0x1p-11 + 0x1p-24);
  float p = static_cast<float>(a) * static_cast<float>(a);
  EXPECT_EQ(-1.0f + p, 0x1p-11f);
}

// As cuBLAS on an H200 (conformance/tests/nvidia_h200_trace_test.cpp).
TEST(EmulationTest, Tf32ModeRoundsOperandsTiesToEven) {
  const double tie = 1 + 0x1p-11;                        // halfway between two TF32 values
  EXPECT_EQ(gemm_1xk(DType::kF32, {tie}, {1}, 0), tie);  // strict f32
  EXPECT_EQ(gemm_1xk(DType::kF32, {tie}, {1}, 1), 1);    // TF32: to even
  EXPECT_EQ(gemm_1xk(DType::kF32, {-tie}, {1}, 1), -1);
  const double odd_tie = 1 + 3 * 0x1p-11;
  EXPECT_EQ(gemm_1xk(DType::kF32, {odd_tie}, {1}, 1), 1 + 0x1p-9);
  // TF32 applies to f32 only: an f64 gemm with math_mode 1 stays exact.
  EXPECT_EQ(gemm_1xk(DType::kF64, {tie}, {1}, 1), tie);
}

TEST(EmulationTest, HalfGemmAccumulatesInF32AndRoundsOnce) {
  const double u = 0x1p-11;  // half an f16 ulp at 1
  // f32 accumulation: 1 + 2^-10 exactly, representable in f16. Rounding
  // each step to f16 would give 1 (two ties to even).
  EXPECT_EQ(gemm_1xk(DType::kF16, {1, u, u}, {1, 1, 1}), 1 + 0x1p-10);
  // One output rounding: 1 + 2^-11 is a tie -> 1; 1 + 3 * 2^-11 -> 1 + 2^-9.
  EXPECT_EQ(gemm_1xk(DType::kF16, {1, u}, {1, 1}), 1.0);
  EXPECT_EQ(gemm_1xk(DType::kF16, {1, 3 * u}, {1, 1}), 1 + 0x1p-9);
  // bf16: 1 + 2^-8 is a tie -> 1; 1 + 2^-8 + 2^-9 -> 1 + 2^-7.
  EXPECT_EQ(gemm_1xk(DType::kBF16, {1, 0x1p-8}, {1, 1}), 1.0);
  EXPECT_EQ(gemm_1xk(DType::kBF16, {1, 0x1p-8, 0x1p-9}, {1, 1, 1}), 1 + 0x1p-7);
}

TEST(EmulationTest, GemmEpilogueAlphaBeta) {
  polychip_op_attrs attrs = default_attrs(*find_op("gemm"));
  attrs.floats[attr::kAlpha] = 2;
  attrs.floats[attr::kBeta] = 0.5;
  auto y = emulate("gemm",
                   {tensor(DType::kF32, {1, 2}, {1, 2}), tensor(DType::kF32, {2, 1}, {3, 4}),
                    tensor(DType::kF32, {1, 1}, {10})},
                   {tensor(DType::kF32, {1, 1}, {})}, &attrs);
  EXPECT_EQ(y[0].values[0], 27);
}

TEST(EmulationTest, ReductionTreeOrderIsTheDocumentedOne) {
  // 4 lanes, 6 elements: lanes fold {0,4}, {1,5}, {2}, {3}; tree offsets 2, 1.
  std::string s = strided_tree_reduce<std::string>(
      6, 4, "",
      [](std::string acc, int64_t i) {
        return acc.empty() ? std::to_string(i) : "(" + acc + "+" + std::to_string(i) + ")";
      },
      [](const std::string& a, const std::string& b) { return "(" + a + "+" + b + ")"; });
  EXPECT_EQ(s, "(((0+4)+2)+((1+5)+3))");
  // 64 lanes = 2 warps: warp results combined by warp 0's tree.
  int64_t sum = strided_tree_reduce<int64_t>(
      100, 64, 0, [](int64_t acc, int64_t i) { return acc + i; },
      [](int64_t a, int64_t b) { return a + b; });
  EXPECT_EQ(sum, 4950);
  EXPECT_EQ(warp_row_lanes(3), 4);
  EXPECT_EQ(warp_row_lanes(1000), 32);
}

TEST(EmulationTest, ReduceSumFollowsTheBlockTree) {
  // Element 0 = 1 and 32 elements of 2^-24 on lanes 1..32 of 256. Lane 0's
  // warp tree adds 1 to lane 16's 2^-24 first (a tie: lost), then sums that
  // already hold 2^-23 or more: the f32 result differs from sequential
  // accumulation (which loses every term) and from exact math.
  std::vector<double> x(33, 0x1p-24);
  x[0] = 1;
  auto y = emulate("reduce_sum", {tensor(DType::kF32, {33}, x)}, {tensor(DType::kF32, {1}, {})});
  float sequential = 0;
  for (double v : x) sequential += static_cast<float>(v);
  EXPECT_EQ(sequential, 1.0f);
  EXPECT_NE(y[0].values[0], 1.0);
  EXPECT_NEAR(y[0].values[0], 1 + 32 * 0x1p-24, 4 * 0x1p-23);
}

TEST(EmulationTest, ElementwiseIsCorrectlyRoundedFloatMath) {
  auto y = emulate("exp", {tensor(DType::kF32, {3}, {0, 1, -100})}, {tensor(DType::kF32, {3}, {})});
  EXPECT_EQ(y[0].values[0], 1);
  EXPECT_EQ(y[0].values[1], static_cast<double>(static_cast<float>(std::exp(1.0))));
  EXPECT_EQ(y[0].values[2], static_cast<double>(static_cast<float>(std::exp(-100.0))));
  // f16 exp computed in float and rounded once to f16.
  auto h = emulate("exp", {tensor(DType::kF16, {1}, {1})}, {tensor(DType::kF16, {1}, {})});
  EXPECT_EQ(h[0].values[0], 2.71875);
  // silu(-Inf) is NaN on NVIDIA (x / (1 + exp(-x)) = -Inf / Inf).
  auto s = emulate("silu", {tensor(DType::kF32, {1}, {-INFINITY})}, {tensor(DType::kF32, {1}, {})});
  EXPECT_TRUE(std::isnan(s[0].values[0]));
}

TEST(EmulationTest, DocumentedUlpBoundsConvertToTheOutputDtype) {
  auto exp_f32 = documented_ulp_bound("exp", DType::kF32);
  ASSERT_TRUE(exp_f32.has_value());
  EXPECT_EQ(exp_f32->cuda_function, "expf");
  EXPECT_EQ(exp_f32->max_ulp_function, 2);
  EXPECT_EQ(exp_f32->max_ulp_output, 2.5);  // from the exact result
  EXPECT_EQ(documented_ulp_bound("log", DType::kF64)->cuda_function, "log");
  EXPECT_EQ(documented_ulp_bound("add", DType::kF32)->max_ulp_output, 0.5);
  EXPECT_EQ(documented_ulp_bound("exp", DType::kF16)->max_ulp_output, 0.5 + 2.5 * 0x1p-13);
  EXPECT_EQ(documented_ulp_bound("tanh", DType::kBF16)->max_ulp_output, 0.5 + 2.5 * 0x1p-16);
  EXPECT_FALSE(documented_ulp_bound("sigmoid", DType::kF32).has_value());
  EXPECT_FALSE(documented_ulp_bound("gemm", DType::kF32).has_value());
  ASSERT_NE(find_cuda_math_bound("erfcf"), nullptr);
  EXPECT_EQ(find_cuda_math_bound("erfcf")->max_ulp, 4);
}

TEST(EmulationTest, CastFromF64GoesThroughF32) {
  // 1 + 2^-11 + 2^-30 rounds to f16 1 + 2^-10 directly, but to f32 first it
  // becomes 1 + 2^-11 (a tie) and then 1: c10's double rounding.
  auto y = emulate("cast", {tensor(DType::kF64, {1}, {1 + 0x1p-11 + 0x1p-30})},
                   {tensor(DType::kF16, {1}, {})});
  EXPECT_EQ(y[0].values[0], 1.0);
  auto z = emulate("cast", {tensor(DType::kF32, {2}, {1 + 3 * 0x1p-11, 70000})},
                   {tensor(DType::kF16, {2}, {})});
  EXPECT_EQ(z[0].values[0], 1 + 0x1p-9);
  EXPECT_EQ(z[0].values[1], INFINITY);
}

TEST(EmulationTest, DataErrorsAreInvalidArgument) {
  try {
    emulate("cross_entropy", {tensor(DType::kF32, {1, 2}, {0, 0}), tensor(DType::kI64, {1}, {2})},
            {tensor(DType::kF32, {1}, {})});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
  }
  EXPECT_THROW(emulate("add", {tensor(DType::kF32, {2}, {1, 2}), tensor(DType::kF16, {2}, {1, 2})},
                       {tensor(DType::kF32, {2}, {})}),
               Error);
}

// --- every op against the oracle -------------------------------------------

struct Case {
  std::vector<HostTensor> in, out;
  polychip_op_attrs attrs;
};

std::vector<double> random_values(std::mt19937& gen, int64_t n, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(gen);
  return v;
}

// A small valid call of `op` in compute dtype t, inputs rounded to their dtypes.
Case make_case(const OpSpec& op, DType t, std::mt19937& gen) {
  const std::string name = op.name;
  Case c{{}, {}, default_attrs(op)};
  const int64_t n = 4, d = 48, s = 70, h = 2;  // s > 64: two attention key blocks
  auto dims_for = [&](const TensorSpec& spec) -> Shape {
    std::string_view sh = spec.shape;
    if (name == "gemm")
      return sh.starts_with("[B?, M")   ? Shape{5, 7}
             : sh.starts_with("[B?, K") ? Shape{300, 7}
                                        : Shape{5, 7};
    if (op.family == std::string_view("elementwise") || name.find("softmax") != std::string::npos)
      return {3, 37};
    if (op.family == std::string_view("reduction"))
      return spec.is_output ? Shape{3, 1} : Shape{3, 300};
    if (sh == "[N, D]") return {n, d};
    if (sh == "[D]") return {d};
    if (sh == "[N]") return {n};
    if (sh == "[N, C]") return {n, 50};
    if (sh == "[V, D]") return {11, d};
    if (sh == "[S, H, D]") return {6, h, 8};
    if (sh == "[S, D/2]") return {6, 4};
    if (sh == "[B, H, S, D]") return {1, h, s, 16};
    if (sh == "[B, H, S]") return {1, h, s};
    return {n};
  };
  for (const auto& spec : op.tensors) {
    DType dt = spec.dtype_role == DTypeRole::kF32     ? DType::kF32
               : spec.dtype_role == DTypeRole::kIndex ? DType::kI64
                                                      : t;
    if (name == "cast" && spec.is_output) dt = t == DType::kF32 ? DType::kF16 : DType::kF32;
    HostTensor ht{dt, dims_for(spec), {}};
    if (name == "gemm" && std::string_view(spec.name) == "a") ht.shape = {5, 300};
    if (!spec.is_output) {
      int64_t count = precision::host_element_count(ht.shape);
      double lo = -2, hi = 2;
      std::string_view tn = spec.name;
      if (name == "log" || name == "sqrt" || name == "rsqrt" || tn == "rstd" || tn == "v") lo = 0.1;
      if (tn == "rstd") hi = 1.5;
      if (tn == "cos" || tn == "sin") lo = -1, hi = 1;
      if (name == "adamw" && tn == "v") lo = 0.001, hi = 0.01;
      ht.values = random_values(gen, count, lo, hi);
      if (dt == DType::kI64) {
        int64_t limit = name.starts_with("cross") ? 50 : 11;
        for (auto& v : ht.values) v = std::floor((v + 2) / 4 * limit);
      } else {
        for (auto& v : ht.values) v = round_to(dt, v);
      }
    }
    (spec.is_output ? c.out : c.in).push_back(std::move(ht));
  }
  return c;
}

// Attention and norm backward need consistent saved statistics: compute
// them with the oracle's forward pass from the same inputs.
void make_consistent(const std::string& name, Case& c) {
  auto forward = [&](const char* fwd, std::vector<HostTensor> in, std::vector<HostTensor> out) {
    const OpSpec& op = *find_op(fwd);
    precision::oracle_run(op, in, out, default_attrs(op));
    return out;
  };
  if (name == "attention_backward") {
    auto f = forward("attention", {c.in[1], c.in[2], c.in[3]}, {c.out[0], c.in[5]});
    c.in[4].values = f[0].values;
    for (auto& v : c.in[4].values) v = round_to(c.in[4].dtype, v);
    c.in[5].values = f[1].values;
    for (auto& v : c.in[5].values) v = round_to(DType::kF32, v);
  }
  if (name == "layernorm_backward" || name == "rmsnorm_backward") {
    bool ln = name == "layernorm_backward";
    std::vector<HostTensor> in = {c.in[1], c.in[2]};
    if (ln) in.push_back(c.in[2]);
    std::vector<HostTensor> out = {c.out[0], c.in[3]};
    if (ln) out.push_back(c.in[4]);
    auto f = forward(ln ? "layernorm" : "rmsnorm", in, out);
    for (size_t k = 1; k < f.size(); ++k) {
      for (auto& v : f[k].values) v = round_to(DType::kF32, v);
      c.in[2 + k].values = f[k].values;
    }
  }
}

double unit_roundoff(DType t) {
  switch (t) {
    case DType::kF64:
      return 0x1p-53;
    case DType::kF16:
      return 0x1p-11;
    case DType::kBF16:
      return 0x1p-8;
    default:
      return 0x1p-24;
  }
}

TEST(EmulationTest, EveryOpAgreesWithTheOracleWithinItsArithmetic) {
  std::mt19937 gen(2026);
  for (const auto& op : op_contract()) {
    for (DType t : op.dtypes) {
      if (op.name == std::string("cast") && (t == DType::kF8E4M3 || t == DType::kF8E5M2)) continue;
      Case c = make_case(op, t, gen);
      make_consistent(op.name, c);
      std::vector<HostTensor> exact = c.out, emulated = c.out;
      precision::oracle_run(op, c.in, exact, c.attrs);
      nvidia_reference_run(op, c.in, emulated, c.attrs);
      for (size_t k = 0; k < exact.size(); ++k) {
        // Error budget: the output rounding plus f32 (or f64) arithmetic over
        // reductions of up to a few hundred terms, relative to the scale of
        // the output.
        DType out_t = emulated[k].dtype;
        double scale = 0;
        for (double v : exact[k].values) scale = std::max(scale, std::fabs(v));
        double compute_u = t == DType::kF64 ? 0x1p-53 : 0x1p-24;
        double tol = (2 * unit_roundoff(out_t) + 600 * compute_u) * std::max(scale, 1e-30);
        if (op.name == std::string("attention_backward") && t != DType::kF64 && t != DType::kF32)
          tol *= 8;  // P and dS are rounded to the input dtype as MMA operands
        for (size_t e = 0; e < exact[k].values.size(); ++e) {
          double want = exact[k].values[e], got = emulated[k].values[e];
          if (out_t != DType::kF64 && out_t != DType::kI64) want = round_to(out_t, want);
          ASSERT_NEAR(got, want, tol)
              << op.name << " " << dtype_name(t) << " output " << k << " element " << e;
        }
      }
    }
  }
}

}  // namespace
}  // namespace polychip::reference
